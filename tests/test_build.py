"""notebooks/ and examples/submissions/ are exactly
what the generators produce from the sources now."""
import json

import nbformat
import pytest

from bpe_labs import ROOT as REPO_ROOT
from bpe_labs.build import build
from bpe_labs.examples import load_cases, make_submission
from autograder.labs import HIDDEN_TESTS, all_labs

MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS",
           "bpe_labs.reference")


def test_student_notebooks_have_not_drifted(tmp_path):
    for path in build(tmp_path):
        committed = REPO_ROOT / "notebooks" / path.name
        assert committed.exists(), (
            f"notebooks/{path.name} is missing: run `python -m autograder build`"
        )
        assert json.loads(committed.read_text()) == json.loads(path.read_text()), (
            f"notebooks/{path.name} differs from what solutions/ builds: run `python -m autograder "
            "build`"
        )
    assert sorted(p.name for p in (REPO_ROOT / "notebooks").glob("*.ipynb")) == sorted(
        p.name for p in tmp_path.glob("*.ipynb")
    )


@pytest.mark.parametrize("lab_id", list(all_labs()))
def test_student_notebook_has_no_solution_or_hidden_test_text(lab_id):
    text = (REPO_ROOT / "notebooks" / f"{lab_id}.ipynb").read_text(encoding="utf-8")
    for marker in MARKERS:
        assert marker not in text
    lab = all_labs()[lab_id]
    student = nbformat.read(REPO_ROOT / "notebooks" / f"{lab_id}.ipynb", as_version=4)
    code = "\n".join(cell.source for cell in student.cells)
    visible = "\n".join(HIDDEN_TESTS.sub("", cell.source) for cell in lab.solution_notebook().cells)
    for part in lab.parts:
        for line in part.hidden_tests.splitlines():
            if len(line.strip()) > 30 and line.strip() not in visible:
                assert line.strip() not in code, (
                    f"hidden test line leaked into notebooks/{lab_id}.ipynb: {line.strip()}"
                )
    assert all(not cell.get("outputs") for cell in student.cells if cell.cell_type == "code")


def test_student_notebooks_carry_lab_metadata_and_colab_badge():
    for lab in all_labs().values():
        nb = nbformat.read(lab.student_path, as_version=4)
        assert nb.metadata["bpe_labs"]["lab"] == lab.lab_id
        assert (
            f"colab.research.google.com/github/bpe-labs/bpe-labs/blob/main/notebooks/{lab.lab_id}.ipynb"
            in nb.cells[0].source
        )
        nbformat.validate(nb)


def test_example_submissions_have_not_drifted():
    for case in load_cases():
        committed = REPO_ROOT / "examples" / "submissions" / f"{case['id']}.ipynb"
        assert committed.exists(), "run `python -m autograder examples`"
        assert json.loads(committed.read_text()) == json.loads(
            nbformat.writes(make_submission(case))
        ), (
            f"{committed.name} differs from what examples/{case['spec']} makes: run `python -m "
            "autograder examples`"
        )


def test_the_course_home_is_one_setting_for_badges_and_documents(tmp_path, monkeypatch):
    from bpe_labs.build import release_notebook
    from autograder.labs import get_lab

    monkeypatch.setenv("BPE_LABS_HOME", "our-school/bpe-course@spring")
    for lab_id in ("toy_bpe", "corpus_prep"):
        text = "\n".join(
            cell.source
            for cell in release_notebook(get_lab(lab_id), tmp_path / "gradebook.db").cells
        )
        assert (
            f"colab.research.google.com/github/our-school/bpe-course/blob/spring/notebooks/{lab_id}.ipynb"
            in text
        )
        assert "bpe-labs/bpe-labs" not in text
    assert 'COURSE_HOME = "https://github.com/our-school/bpe-course"' in text

"""Gradescope's autograder zip, run the way Gradescope runs it.

Each zip is built with ``python -m autograder gradescope LAB``, unpacked into a temporary folder
laid out as Gradescope's ``/autograder`` (``source/``, ``submission/``, ``results/``), and its
``run_autograder`` is run once per submission with this machine's Python. Every results.json must
have the shape of Gradescope's results specification, and its scores must equal those of the
command line's grader (``grade_folder``) on the same files. Feedback must carry no hidden-test
source or inputs; a malformed submission must get a results.json with score 0 and a reason.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import nbformat
import pytest

from adversarial import CASES_BY_ID, correct_notebook
from bpe_labs import ROOT as REPO_ROOT
from autograder.batch.run import grade_folder
from autograder.gradescope import CONFIG_NAME, OUTPUT_LIMIT, VISIBILITIES, build_zip, part_output
from autograder.labs import HIDDEN_TESTS, get_lab
from autograder.grading.result import GradeResult, PartScore
from test_adversarial import recorded_inputs

SUBMISSIONS = REPO_ROOT / "examples" / "submissions"
# Per lab: a correct submission, the untouched release, and one with a planted bug.
EXAMPLES = {"toy_bpe": ["toy-correct", "toy-untouched", "toy-merge-overlaps"],
            "ny_constitution": ["ny-correct", "ny-untouched", "ny-tokenize-shortest"]}
# A toy-lab submission whose code raises with the hidden tests' inputs in the message.
LEAK_CASES = ["leak-exception-message"]
# Gradescope keeps the folders of an uploaded zip or repository: this one sits in a folder.
IN_A_FOLDER = {"toy-merge-overlaps": "lab1/"}

# Gradescope's results.json as its specification describes it
# (https://gradescope-autograders.readthedocs.io/en/latest/specs/): no other keys are allowed here,
# so that a misspelt key fails this test instead of being ignored by Gradescope.
VISIBILITY = {"enum": list(VISIBILITIES)}
FORMAT = {"enum": ["text", "html", "simple_format", "md", "ansi"]}
TEST_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "score", "max_score", "visibility", "output"],
    "properties": {
        "score": {"type": "number", "minimum": 0},
        "max_score": {"type": "number", "minimum": 0},
        "status": {"enum": ["passed", "failed"]},
        "name": {"type": "string", "minLength": 1},
        "name_format": FORMAT,
        "number": {"type": "string"},
        "output": {"type": "string"},
        "output_format": FORMAT,
        "tags": {"type": "array", "items": {"type": "string"}},
        "visibility": VISIBILITY,
        "extra_data": {"type": "object"},
    },
}
RESULTS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["score", "output", "tests"],
    "properties": {
        "score": {"type": "number", "minimum": 0},
        "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string", "minLength": 1},
        "output_format": FORMAT,
        "test_output_format": FORMAT,
        "test_name_format": FORMAT,
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": TEST_SCHEMA},
        "leaderboard": {"type": "array"},
    },
}


@pytest.fixture(scope="module")
def zips(tmp_path_factory) -> dict[str, Path]:
    """One zip per lab, built by the command an instructor runs."""
    out = tmp_path_factory.mktemp("gradescope-zips")
    # the stand-ins, as the CLI below
    env = {key: value for key, value in os.environ.items() if key != "BPE_LABS_DATA"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    for lab_id in EXAMPLES:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "autograder",
                "gradescope",
                lab_id,
                "--out",
                str(out / f"{lab_id}.zip"),
            ],
            cwd=out,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
    return {lab_id: out / f"{lab_id}.zip" for lab_id in EXAMPLES}


def unpack(zip_path: Path, root: Path) -> Path:
    """A folder laid out as Gradescope's /autograder after its image was built."""
    for folder in ("source", "submission", "results"):
        (root / folder).mkdir(parents=True)
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(root / "source")
        # extractall drops permissions; Gradescope's unzip keeps them
        for info in archive.infolist():
            (root / "source" / info.filename).chmod((info.external_attr >> 16) & 0o777)
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    return root


def run_autograder(
    root: Path, venv: Path = Path(sys.prefix), timeout: float = 300, **extra_env: str
) -> subprocess.CompletedProcess:
    """As Gradescope does: /autograder/run_autograder from /autograder, with this machine's virtual
    environment in place of the one setup.sh makes, and nothing of this checkout on the Python path,
    so that only the unpacked zip can be used."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "BPE_LABS_DATA")
    }
    env.update(AUTOGRADER_GRADESCOPE_ROOT=str(root), AUTOGRADER_VENV=str(venv), **extra_env)
    return subprocess.run(
        [str(root / "run_autograder")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def hand_in(zip_path: Path, root: Path, files: dict[str, bytes]) -> Path:
    """A Gradescope root with the zip unpacked and the student's files in submission/."""
    unpack(zip_path, root)
    for name, content in files.items():
        (root / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / name).write_bytes(content)
    return root


def graded(root: Path) -> tuple[dict, subprocess.CompletedProcess]:
    run = run_autograder(root)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8")), run


def grade_two_at_a_time(
    roots: dict[str, Path],
) -> dict[str, tuple[dict, subprocess.CompletedProcess]]:
    """Each prepared root graded, two at a time. The roots are all written before any run starts:
    a thread copying run_autograder while another thread forks gives the child the file open for
    writing, and exec of that file then fails with ETXTBSY ("Text file busy")."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(roots, pool.map(graded, roots.values())))


def leak_submission(case_id: str) -> bytes:
    return CASES_BY_ID[case_id].build(correct_notebook())


@pytest.fixture(scope="module")
def submissions() -> dict[str, tuple[str, bytes]]:
    """Case id -> (lab, the handed-in file)."""
    cases = {
        name: (lab_id, (SUBMISSIONS / f"{name}.ipynb").read_bytes())
        for lab_id, names in EXAMPLES.items()
        for name in names
    }
    cases.update({case_id: ("toy_bpe", leak_submission(case_id)) for case_id in LEAK_CASES})
    return cases


@pytest.fixture(scope="module")
def gradescope_results(
    zips, submissions, tmp_path_factory
) -> dict[str, tuple[dict, subprocess.CompletedProcess]]:
    """Every submission graded alone in its own Gradescope root, two at a time."""
    base = tmp_path_factory.mktemp("gradescope-roots")

    roots = {
        case_id: hand_in(
            zips[lab_id],
            base / case_id,
            {f"{IN_A_FOLDER.get(case_id, '')}{case_id}.ipynb": content},
        )
        for case_id, (lab_id, content) in submissions.items()
    }
    return grade_two_at_a_time(roots)


@pytest.fixture(scope="module")
def cli_results(submissions, tmp_path_factory) -> dict[str, GradeResult]:
    """The same files graded by the command line's grader."""
    folder = tmp_path_factory.mktemp("cli-submissions")
    for case_id, (_, content) in submissions.items():
        (folder / f"{case_id}.ipynb").write_bytes(content)
    results = grade_folder(folder, tmp_path_factory.mktemp("cli-out"), workers=2, progress=False)
    return {result.student_id: result for result in results}


# -- the zip ------------------------------------------------------------------------------------

def test_zip_holds_the_scripts_the_lab_and_only_that_lab(zips):
    with zipfile.ZipFile(zips["toy_bpe"]) as archive:
        names = set(archive.namelist())
        modes = {info.filename: (info.external_attr >> 16) & 0o777 for info in archive.infolist()}
        config = json.loads(archive.read(CONFIG_NAME))
    assert {
        "setup.sh",
        "run_autograder",
        "requirements.txt",
        "autograder/grading/grade.py",
        "autograder/gradescope.py",
        "solutions/toy_bpe.ipynb",
        "notebooks/toy_bpe.ipynb",
        "data/standins/ny01.asp",
    } <= names
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    # the hidden tests of the other labs stay home
    assert [name for name in names if name.startswith("solutions/")] == ["solutions/toy_bpe.ipynb"]
    assert not [
        name for name in names if name.startswith(("tests/", "examples/")) or "__pycache__" in name
    ]
    assert config["lab"] == "toy_bpe" and config["data_dir"] == "data/standins"


def test_setup_script_is_sane_bash_that_installs_what_run_autograder_uses(zips, tmp_path):
    root = unpack(zips["toy_bpe"], tmp_path / "autograder")
    for script in ("setup.sh", "run_autograder"):
        check = subprocess.run(
            ["bash", "-n", str(root / "source" / script)], capture_output=True, text=True
        )
        assert check.returncode == 0, check.stderr
    setup = (root / "source" / "setup.sh").read_text()
    assert (
        'python3 -m venv "$VENV"' in setup
        and '"$VENV/bin/python" -m pip install -r "$ROOT/source/requirements.txt"' in setup
    )
    # run_autograder uses the environment setup.sh makes,
    # which lies outside the root the kernel may not read
    venvs = {
        re.search(r"AUTOGRADER_VENV:-([^}]+)}", (root / "source" / script).read_text()).group(1)
        for script in ("setup.sh", "run_autograder")
    }
    assert len(venvs) == 1 and not venvs.pop().startswith("/autograder")
    # the check setup.sh ends with passes on the unpacked zip alone
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    ready = subprocess.run(
        [sys.executable, "-m", "autograder.gradescope", "--check"],
        cwd=root / "source",
        env=env,
        capture_output=True,
        text=True,
    )
    assert ready.returncode == 0, ready.stderr
    assert "ready to grade toy_bpe (5 parts, 11 points)" in ready.stdout


def test_a_data_dir_of_the_instructor_is_shipped_and_used(tmp_path):
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    (corpora / "ny01.asp").write_text("<html>the real page</html>")
    with zipfile.ZipFile(
        build_zip("ny_constitution", tmp_path / "ny.zip", data_dir=corpora)
    ) as archive:
        assert archive.read("data/course/ny01.asp") == b"<html>the real page</html>"
        assert json.loads(archive.read(CONFIG_NAME))["data_dir"] == "data/course"


def test_a_check_that_prints_without_end_is_cut_short():
    part = PartScore("merge", 2, 2, "all checks passed", visible_check="✅ line\n" * 20_000)
    text = part_output(part)
    assert text.startswith(
        "all checks passed\n\nYour notebook's own check on the example said:\n✅ line"
    )
    assert len(text) < OUTPUT_LIMIT + 100 and text.endswith("more characters not shown)")


# -- grading ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "case_id", [name for names in EXAMPLES.values() for name in names] + LEAK_CASES
)
def test_results_follow_the_spec_and_equal_the_command_line(
    case_id, gradescope_results, cli_results, submissions
):
    results, run = gradescope_results[case_id]
    cli = cli_results[case_id]
    lab = get_lab(submissions[case_id][0])
    jsonschema.validate(results, RESULTS_SCHEMA)
    assert cli.status == "graded", cli.message
    assert results["score"] == cli.score
    assert [test["name"] for test in results["tests"]] == [part.part_id for part in lab.parts]
    assert {test["name"]: test["score"] for test in results["tests"]} == {
        pid: p.score for pid, p in cli.parts.items()
    }
    assert [test["max_score"] for test in results["tests"]] == [part.points for part in lab.parts]
    assert sum(test["score"] for test in results["tests"]) == results["score"]
    for test in results["tests"]:  # the same feedback text as the command line's
        assert test["output"] == part_output(cli.parts[test["name"]])
        assert test["status"] == ("passed" if test["score"] == test["max_score"] else "failed")
    # graded by the unpacked zip, not by this checkout
    assert f"course files in {run.args[0].rsplit('/', 1)[0]}/source" in run.stdout


def test_the_examples_span_full_partial_and_no_marks(gradescope_results):
    """The comparison above is not vacuous: the three submissions of a lab score differently."""
    for lab_id, (correct, untouched, wrong) in EXAMPLES.items():
        max_score = get_lab(lab_id).max_score
        scores = [gradescope_results[name][0]["score"] for name in (correct, untouched, wrong)]
        assert scores[0] == max_score and scores[1] == 0 and 0 < scores[2] < max_score, (
            lab_id,
            scores,
        )


def hidden_source_lines(lab_id: str) -> set[str]:
    """Code lines of the lab's hidden tests that appear nowhere else in its solution notebook."""
    lab = get_lab(lab_id)
    visible = "\n".join(HIDDEN_TESTS.sub("", cell.source) for cell in lab.solution_notebook().cells)
    lines = {line.strip() for part in lab.parts for line in part.hidden_tests.splitlines()}
    # assert messages are meant to be shown: keep the code before them
    return {
        line.split(', "')[0]
        for line in lines
        if len(line) > 12 and not line.startswith(('"', "f\"", "'")) and line not in visible
    }


def test_results_show_no_hidden_test_source(gradescope_results, submissions):
    for case_id, (results, _) in gradescope_results.items():
        text = json.dumps(results, ensure_ascii=False)
        for forbidden in (
            "BEGIN HIDDEN",
            "END HIDDEN",
            "Traceback",
            'File \\"',
            "bpe_labs.reference",
        ):
            assert forbidden not in text, (case_id, forbidden)
        leaked = [line for line in hidden_source_lines(submissions[case_id][0]) if line in text]
        assert not leaked, (case_id, leaked[:3])


def test_hidden_inputs_a_submission_smuggles_out_stay_out(gradescope_results):
    """This submission raises with the inputs the hidden tests give it in the message; none of those
    inputs reaches results.json (whose text equals the command line's feedback, checked above)."""
    _, hidden, printed = recorded_inputs()
    shown = printed + "\n".join(cell.source for cell in get_lab("toy_bpe").release_notebook().cells)
    distinct = {value for value in hidden if len(value) >= 12 and value not in shown}
    assert len(distinct) > 50
    for case_id in LEAK_CASES:
        text = json.dumps(gradescope_results[case_id][0], ensure_ascii=False)
        assert not sorted(value for value in distinct if value in text), case_id


# -- what students hand in that is not one notebook -----------------------------------------------

def test_malformed_submissions_get_score_zero_and_a_reason(zips, tmp_path):
    correct = (SUBMISSIONS / "toy-correct.ipynb").read_bytes()
    cases = {
        "no notebook": ({"answers.py": b"print('hi')\n"}, "No notebook (.ipynb file) was found"),
        "two notebooks": (
            {"a.ipynb": correct, "b.ipynb": correct},
            "Your submission has 2 notebooks (a.ipynb, b.ipynb)",
        ),
        "invalid json": (
            {"toy_bpe.ipynb": correct[: len(correct) // 2]},
            "the file is not valid JSON",
        ),
        "another lab": (
            {"gpt2.ipynb": (SUBMISSIONS / "gpt2-correct.ipynb").read_bytes()},
            "this notebook is not one of the labs (toy_bpe)",
        ),
    }

    roots = {
        name: hand_in(zips["toy_bpe"], tmp_path / name.replace(" ", "-"), files)
        for name, (files, _) in cases.items()
    }
    outcomes = grade_two_at_a_time(roots)
    for name, (results, run) in outcomes.items():
        reason = cases[name][1]
        jsonschema.validate(results, RESULTS_SCHEMA)
        assert results["score"] == 0, name
        assert [test["score"] for test in results["tests"]] == [0] * len(
            get_lab("toy_bpe").parts
        ), name
        assert reason in results["output"], (name, results["output"])
        assert "Traceback" not in run.stdout + run.stderr, name


def test_a_grader_that_dies_still_leaves_results(zips, tmp_path):
    """If the grading process itself is killed, run_autograder writes a score of 0 and a reason."""
    root = unpack(zips["toy_bpe"], tmp_path / "autograder")
    (root / "submission" / "toy_bpe.ipynb").write_bytes(
        (SUBMISSIONS / "toy-correct.ipynb").read_bytes()
    )
    dead = tmp_path / "venv" / "bin"
    dead.mkdir(parents=True)
    (dead / "python").symlink_to(shutil.which("false"))
    run = run_autograder(root, venv=tmp_path / "venv")
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(results, RESULTS_SCHEMA)
    assert (
        run.returncode == 0
        and results["score"] == 0
        and "Please tell your instructor" in results["output"]
    )


# Gradescope's container may lack what the kernel boundary needs (namespaces, Landlock): then the
# kernel runs behind the fence, which must keep it out of the Gradescope root as well.
@pytest.mark.parametrize("isolation", ["default", "fence"])
def test_the_student_kernel_cannot_touch_the_gradescope_root(isolation, zips, tmp_path):
    """A cell that tries to plant a file in results/ and to read the hidden tests in source/ gets
    nowhere; the lab's parts are graded as usual and only the grader writes results.json."""
    root = unpack(zips["toy_bpe"], tmp_path / "autograder")
    notebook = nbformat.read(SUBMISSIONS / "toy-correct.ipynb", as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(
        "from pathlib import Path\n"
        f"Path({str(root / 'results' / 'planted.json')!r}).write_text('{{\"score\": 1000}}')\n"
        f"hidden = Path({str(root / 'source' / 'solutions' / 'toy_bpe.ipynb')!r}).read_text()\n"
        "raise RuntimeError('READ THE HIDDEN TESTS')\n"))
    (root / "submission" / "toy_bpe.ipynb").write_text(nbformat.writes(notebook), encoding="utf-8")
    venv = Path(sys.prefix)
    # the fence's kernel runs under a uid of its own, never root: it needs a
    if isolation == "fence":
        from test_gradescope_guard import python_open_to_others  # Python other users can run

        venv = python_open_to_others() if os.geteuid() == 0 else venv
        if venv is None:
            pytest.skip("no Python here that a kernel under a uid of its own could run")
    try:
        run = run_autograder(
            root, venv=venv, **({"AUTOGRADER_ISOLATION": "fence"} if isolation == "fence" else {})
        )
    finally:
        if venv != Path(sys.prefix):
            shutil.rmtree(venv, ignore_errors=True)
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert run.returncode == 0 and results["score"] == get_lab("toy_bpe").max_score, results[
        "output"
    ]
    assert not (root / "results" / "planted.json").exists()
    assert (
        "Cells that did not run" in results["output"]
        and "READ THE HIDDEN TESTS" not in results["output"]
    )

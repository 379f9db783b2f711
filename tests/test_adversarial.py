"""The adversarial suite (tests/adversarial.py), graded by the real autograder in one batch.

Each case states its exact outcome: status, lab, points per part, integrity events. Feedback of
every case is searched for hidden-test source and for the hidden inputs themselves (recorded by
running the hidden tests against the reference). An interrupted batch must resume without
regrading what it had finished and end as an uninterrupted run does.
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from bs4 import BeautifulSoup

import autograder.batch.run as batch
from adversarial import CASES, LAB, CallLog, correct_notebook, write_cases
from autograder.reports import gradebook, report
from autograder.batch.run import grade_folder
from autograder.grading.check import free_names
from autograder.grading.grade import Settings, grade_file as real_grade_file
from autograder.kernel.session import OWN_EXCEPTION, Limits
from autograder.labs import HIDDEN_TESTS, get_lab
from autograder.grading.result import GradeResult
from autograder.batch.resume import unsigned

# Small limits keep the endless loops, memory blow-ups and kernel deaths cheap.
SETTINGS = Settings(limits=Limits(cell_seconds=3, call_seconds=2, notebook_seconds=90,
                                  memory_bytes=int(1.5 * 1024**3)), part_seconds=20)

# Cases whose student code tries to smuggle hidden inputs into its own feedback.
LEAK_CASES = ("leak-exception-message", "leak-exception-class-name", "leak-via-visible-check",
              "leak-encoded-print", "leak-added-cell-error")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Every case written into one folder and graded there in one batch (2 workers)."""
    root = tmp_path_factory.mktemp("adversarial")
    write_cases(root / "submissions")
    results = grade_folder(root / "submissions", root / "out", SETTINGS, workers=2, progress=False)
    return root / "out", {Path(result.file).name: result for result in results}


@pytest.mark.parametrize("case", CASES, ids=[case.case_id for case in CASES])
def test_case_gets_its_exact_outcome(case, graded):
    _, results = graded
    result = results[case.file]
    assert result.status == case.status, result.message
    # a row whose file gives no lab names the batch's (issue 33: every row names its lab)
    assert result.lab == (LAB if case.lab is None else case.lab)
    assert {part_id: part.score for part_id, part in result.parts.items()} == case.parts
    assert result.score == case.total
    assert sorted((event.event, event.cell) for event in result.integrity) == sorted(case.integrity)
    if case.status != "graded":
        assert result.message, "a file that was not graded must say why"


def test_every_file_has_its_own_row_with_its_status(graded):
    out, results = graded
    table = pd.read_csv(out / "grades.csv")
    assert sorted(Path(f).name for f in table["file"]) == sorted(case.file for case in CASES)
    statuses = {Path(f).name: s for f, s in zip(table["file"], table["status"])}
    assert statuses == {case.file: case.status for case in CASES}
    graded_results = [result for result in results.values() if result.status == "graded"]
    assert len(graded_results) == sum(case.status == "graded" for case in CASES)
    assert gradebook.total_scores(out / "gradebook.db") == {(r.student_id, r.lab): r.score
                                                            for r in graded_results}


def hidden_source_fragments() -> set[str]:
    """Code lines of the toy lab's hidden tests that appear nowhere else in the notebook."""
    lab = get_lab(LAB)
    visible = "\n".join(HIDDEN_TESTS.sub("", cell.source) for cell in lab.solution_notebook().cells)
    fragments = set()
    for part in lab.parts:
        for line in part.hidden_tests.splitlines():
            code = line.strip()
            # assert messages are meant to be shown: keep the code, never the message text
            if len(code) > 12 and not code.startswith(('"', "f\"", "'")) and code not in visible:
                fragments.add(code.split(', "')[0])
    return fragments


def encodings(argument_repr: str) -> set[str]:
    """How the leak cases print a word they remembered:
    joined with dots, reversed, and dotted in hex."""
    import ast

    value = ast.literal_eval(argument_repr)
    if isinstance(value, list) and value and all(isinstance(s, str) for s in value):
        return {".".join(value), "".join(value)[::-1], ".".join(value).encode().hex()}
    return set()


def recorded_inputs() -> tuple[set[str], set[str], str]:
    """Reprs of every argument the student's functions get: (from the notebook's own cells and
    checks, from the hidden tests only, what the notebook printed). Recorded by running the correct
    submission and then the hidden tests in this process."""
    lab = get_lab(LAB)
    names = {name for part in lab.parts for name in free_names(part.hidden_tests)}
    seen: dict[str, set[str]] = {"visible": set(), "hidden": set()}
    phase = ["visible"]

    def recorder(function):
        def recorded(*args):
            seen[phase[0]].update(repr(arg) for arg in args)
            return function(*args)
        recorded.recorder = True
        return recorded

    namespace: dict = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for cell in correct_notebook().cells:
            if cell.cell_type != "code":
                continue
            exec(compile(cell.source, cell.get("id", "cell"), "exec"), namespace)
            for name in names & set(namespace):
                if not getattr(namespace[name], "recorder", False):
                    namespace[name] = recorder(namespace[name])
        phase[0] = "hidden"
        for part in lab.parts:
            exec(compile(part.hidden_tests, part.part_id, "exec"),
                 {name: namespace[name] for name in free_names(part.hidden_tests)})
    return seen["visible"], seen["hidden"] - seen["visible"], printed.getvalue()


@pytest.fixture(scope="module")
def hidden_inputs() -> set[str]:
    """Hidden inputs long enough to be told apart from ordinary text, and found nowhere a student
    can see them: not in the notebook (its examples, hints, printed outputs), not in a test's
    message."""
    visible, hidden, printed = recorded_inputs()
    shown = "\n".join([printed,
                       *(HIDDEN_TESTS.sub("", cell.source)
                         for cell in get_lab(LAB).release_notebook().cells)])
    shown += "\n" + " ".join(re.findall(r'"([^"]*)"',
                                        " ".join(part.hidden_tests for part in get_lab(LAB).parts)))
    distinct = {text for text in hidden if len(text) >= 12 and text not in shown
                and text.replace("'", '"') not in shown}
    assert len(distinct) > 50, "the hidden tests should have many inputs of their own"
    return distinct


def feedback_text(out: Path, result: GradeResult) -> str:
    return BeautifulSoup(
        report.feedback_path(out, result).read_text(encoding="utf-8"), "html.parser"
    ).get_text()


@pytest.mark.parametrize("case", CASES, ids=[case.case_id for case in CASES])
def test_feedback_shows_no_hidden_test_source(case, graded):
    out, results = graded
    text = feedback_text(out, results[case.file])
    for forbidden in ("BEGIN HIDDEN", "END HIDDEN", "Traceback", 'File "', "_rng", "ref.",
                      "bpe_labs.reference", "random.Random"):
        assert forbidden not in text, forbidden
    leaked = [fragment for fragment in hidden_source_fragments() if fragment in text]
    assert not leaked, f"hidden-test source in the feedback: {leaked[:3]}"


@pytest.fixture(scope="module")
def encoded_inputs() -> tuple[set[str], set[str]]:
    """The leak cases' encodings (dotted, reversed) of
    hidden inputs, and of the notebook's own inputs."""
    visible, hidden, printed = recorded_inputs()
    shown = "\n".join([printed,
                       *(HIDDEN_TESTS.sub("", cell.source)
                         for cell in get_lab(LAB).release_notebook().cells)])
    mine = {form for value in visible for form in encodings(value)}
    theirs = {
        form
        for value in hidden
        for form in encodings(value)
        if len(form) >= 12 and form not in shown
    } - mine
    assert len(theirs) > 20, "the hidden tests should have many inputs of their own"
    return theirs, mine


@pytest.mark.parametrize("case", CASES, ids=[case.case_id for case in CASES])
def test_feedback_shows_no_hidden_inputs(case, graded, hidden_inputs, encoded_inputs):
    out, results = graded
    text = feedback_text(out, results[case.file])
    leaked = sorted(value for value in hidden_inputs | encoded_inputs[0] if value in text)
    assert not leaked, f"hidden inputs in the feedback: {leaked[:3]}"


def test_the_leak_cases_tried_and_their_output_is_shown(graded, encoded_inputs):
    """The hidden-input check above is not vacuous: the leak cases' code did print or raise what it
    remembered, and the student sees it, made only of inputs from the notebook itself."""
    out, results = graded
    texts = {
        case_id: feedback_text(out, results[next(c.file for c in CASES if c.case_id == case_id)])
        for case_id in LEAK_CASES
    }
    assert "❌" in texts["leak-via-visible-check"]
    assert any(form in texts["leak-encoded-print"] for form in encoded_inputs[1]), (
        "the encoded prints are shown"
    )
    assert "ValueError" in texts["leak-added-cell-error"], "the added cell's error is shown"
    assert "raised ValueError" in texts["leak-exception-message"]
    assert f"tokenize raised {OWN_EXCEPTION}" in texts["leak-exception-class-name"]


# -- resume --------------------------------------------------------------------------------------
RESUME_CASES = ["colab-download", "deleted-answer", "cheat-always-equal"]


class Interrupted(BaseException):
    """Stands for Ctrl-C or a killed process: not an Exception, so nothing on the way catches it."""


@pytest.fixture(scope="module")
def resume_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    write_cases(root / "submissions", [c for c in CASES if c.case_id in RESUME_CASES])
    uninterrupted = grade_folder(root / "submissions", root / "uninterrupted", SETTINGS, workers=2,
                                 progress=False)
    assert {r.status for r in uninterrupted} == {"graded"}
    return root


def comparable_grades(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "grades.csv").drop(columns=["seconds"])


def part_scores(db: Path) -> dict:
    from nbgrader.api import Gradebook

    from bpe_labs.build import db_url_for

    with Gradebook(db_url_for(db)) as book:
        return {(submission.student_id, grade.name): grade.score for assignment in book.assignments
                for submission in assignment.submissions for notebook in submission.notebooks
                for grade in notebook.grades}


def count_calls(monkeypatch, log: Path) -> CallLog:
    """Count the files graded (in the grading process, a fork of this one)."""
    calls = CallLog(log)

    def grade_file(path, student_id, settings):
        calls.append(Path(path).name)
        return real_grade_file(path, student_id, settings)

    monkeypatch.setattr(batch, "grade_file", grade_file)
    return calls


def stop_keeping_after(monkeypatch, kept: int) -> None:
    """Interrupt the run (as Ctrl-C would) when the result
    after the ``kept``-th is about to be kept."""
    real = batch._write_atomically
    written = []

    def write_atomically(path, text):
        if len(written) >= kept:
            raise Interrupted()
        written.append(path)
        real(path, text)

    monkeypatch.setattr(batch, "_write_atomically", write_atomically)


def assert_same_as_uninterrupted(root: Path, out: Path) -> None:
    pd.testing.assert_frame_equal(comparable_grades(out), comparable_grades(root / "uninterrupted"))
    assert gradebook.total_scores(out / "gradebook.db") == gradebook.total_scores(
        root / "uninterrupted" / "gradebook.db"
    )
    assert part_scores(out / "gradebook.db") == part_scores(root / "uninterrupted" / "gradebook.db")


def test_an_interrupted_batch_resumes_without_regrading(resume_folder, monkeypatch, tmp_path):
    out = resume_folder / "interrupted"
    shutil.rmtree(out, ignore_errors=True)
    stop_keeping_after(monkeypatch, 2)
    # workers=0: one file at a time, so that the run stops right after the second result was kept
    with pytest.raises(Interrupted):
        grade_folder(resume_folder / "submissions", out, SETTINGS, workers=0, progress=False)
    monkeypatch.undo()
    saved = sorted((out / "results").glob("*.json"))
    assert len(saved) == 2
    kept = {unsigned(json.loads(path.read_text())).file for path in saved}
    before = {path.name: (path.stat().st_mtime_ns, unsigned(json.loads(path.read_text())).seconds)
              for path in saved}

    again = count_calls(monkeypatch, tmp_path / "calls.txt")
    grade_folder(resume_folder / "submissions", out, SETTINGS, workers=0, progress=False)
    assert sorted(again) == sorted(
        set(case.file for case in CASES if case.case_id in RESUME_CASES)
        - {Path(f).name for f in kept}
    ), "only the files without a result may be graded again"
    after = {path.name: (path.stat().st_mtime_ns, unsigned(json.loads(path.read_text())).seconds)
             for path in saved}
    assert after == before, "the results written before the interruption must be reused as they are"
    assert_same_as_uninterrupted(resume_folder, out)


def test_a_batch_interrupted_while_recording_resumes_complete(resume_folder, monkeypatch):
    out = resume_folder / "interrupted-in-record"
    shutil.rmtree(out, ignore_errors=True)
    real_record = gradebook.record

    def record(db_path, result):
        raise Interrupted()

    monkeypatch.setattr(gradebook, "record", record)
    with pytest.raises(Interrupted):
        grade_folder(resume_folder / "submissions", out, SETTINGS, workers=2, progress=False)
    # The gradebook is written before the result file: a file means the student is recorded.
    assert len(list((out / "results").glob("*.json"))) == 0
    monkeypatch.setattr(gradebook, "record", real_record)
    grade_folder(resume_folder / "submissions", out, SETTINGS, workers=2, progress=False)
    assert_same_as_uninterrupted(resume_folder, out)


@pytest.mark.parametrize("case_id", LEAK_CASES)
def test_with_one_kernel_the_feedback_stops_at_the_first_hidden_input(
    case_id, tmp_path, hidden_inputs, encoded_inputs
):
    """``--one-kernel``: no feedback kernel, so nothing the
    notebook printed after a hidden input is shown."""
    from dataclasses import replace

    case = next(c for c in CASES if c.case_id == case_id)
    write_cases(tmp_path, [case])
    result = real_grade_file(tmp_path / case.file, case.case_id,
                             replace(SETTINGS, feedback_kernel=False))
    assert {part_id: part.score for part_id, part in result.parts.items()} == case.parts
    text = BeautifulSoup(report.feedback_html(result), "html.parser").get_text()
    leaked = sorted(value for value in hidden_inputs | encoded_inputs[0] if value in text)
    assert not leaked, f"hidden inputs in the feedback: {leaked[:3]}"
    assert result.parts["initialize"].visible_check, (
        "the first part's check ran before any hidden input"
    )

"""The engine on a course of its own (toy_course.py), not the BPE course: the kernel session, one
part's check and a whole file's grade. ``test_the_engine_tests_need_no_bpe_labs`` runs the engine's
test modules (this one, and grade.py's steps: ``test_step_*.py``, ``test_grading_runner.py``) again
in a process where ``import bpe_labs`` fails."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.grading.check import run_part
from autograder.kernel.session import CallTimeout, KernelSession, Limits
from autograder.kernel.boundary import CoursePaths
from autograder.labs import get_lab
from autograder.grading.result import Verdict
from toy_course import LAB, POINTS, RIGHT, submission, toy_course

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    with toy_course(tmp_path_factory.mktemp("toy")) as course:
        yield course


def test_the_lab_is_read_from_the_toy_solution_notebook(course):
    lab = get_lab(LAB)
    assert [(part.part_id, part.points, part.functions) for part in lab.parts] == [
        ("double", POINTS["double"], ("double",)), ("total", POINTS["total"], ("total",))]
    assert "BEGIN HIDDEN TESTS" not in (course.notebooks / f"{LAB}.ipynb").read_text()


def test_a_kernel_session_runs_cells_and_calls_functions(course, tmp_path):
    with KernelSession(tmp_path / "work",
                       Limits(cell_seconds=5, call_seconds=2, notebook_seconds=60),
                       course=CoursePaths.of(course)) as session:
        assert session.run_cell("def f(x):\n    return [x, {x: (x,)}]\ndef spin():\n    while "
                                "True: pass").status == "ok"
        assert session.call("f", 2) == [2, {2: (2,)}]
        assert list(session.call_each("f", [(1,), (3,)])) == [[1, {1: (1,)}], [3, {3: (3,)}]]
        with pytest.raises(CallTimeout):
            session.call("spin")
        with session.limits_for(4):
            assert session.limits.call_seconds == 4
        assert session.limits.call_seconds == 2
        assert session.run_cell("1 / 0").status == "error"
        assert session.describe("f") == "function" and session.describe("nothing") == "missing"
        (course.data / "corpus.txt").write_text("the course's data")
        assert (
            session.run_cell(
                "assert open('data/corpus.txt').read() == \"the course's data\""
            ).status
            == "ok"
        )
        assert (
            session.run_cell(f"open({str(course.solutions / (LAB + '.ipynb'))!r}).read()").status
            == "error"
        )
    assert session.sent_arguments == [[[2], {}], [1], [3], [[], {}]]


def test_one_part_is_checked_against_the_student_function(course, tmp_path):
    lab = get_lab(LAB)
    with KernelSession(
        tmp_path / "work", Limits(notebook_seconds=60), course=CoursePaths.of(course)
    ) as session:
        session.run_cell("def double(x):\n    return x + x if x != 10 else 0")
        wrong = run_part(session, lab.parts[0], seconds=20)
        session.run_cell("def double(x):\n    raise ValueError('no ' + str(x))")
        raised = run_part(session, lab.parts[0], seconds=20)
        session.run_cell(RIGHT["answer_double"])
        right = run_part(session, lab.parts[0], seconds=20)
    assert (wrong.score, wrong.verdict, wrong.message) == (0, Verdict.FAILED_CHECK,
                                                           "double doubles every number")
    assert (raised.score, raised.verdict) == (0, Verdict.RAISED)
    # never the message ("no 3")
    assert raised.message == "on a hidden test input, double raised ValueError"
    assert (right.score, right.verdict) == (POINTS["double"], Verdict.PASSED)
    assert session.part_passed == {"double": True}


def test_a_file_is_graded_part_by_part(course, tmp_path):
    from autograder.grading.grade import Settings, grade_file

    settings = Settings(limits=Limits(notebook_seconds=120), part_seconds=30)
    right = grade_file(submission(course, RIGHT, tmp_path / "right.ipynb"), "ada", settings)
    assert right.status == "graded" and right.lab == LAB
    assert {pid: (p.score, p.verdict) for pid, p in right.parts.items()} == {
        "double": (2, Verdict.PASSED), "total": (3, Verdict.PASSED)}
    assert right.parts["double"].visible_check == "double(2) = 4"
    half = grade_file(submission(course,
                                 {**RIGHT,
                                  "answer_total": "def total(numbers):\n    return len(numbers)"},
                                 tmp_path / "half.ipynb"), "bob", settings)
    assert half.score == 2 and half.parts["total"].verdict is Verdict.FAILED_CHECK
    assert half.parts["total"].message == "total adds the doubles"
    blank = grade_file(tmp_path / "missing.ipynb", "cy", settings)
    assert blank.status != "graded" and blank.parts == {}


def test_the_engine_tests_need_no_bpe_labs(tmp_path):
    """The engine's test modules (this one and one per step of grade.py), run alone where the BPE
    course cannot be imported: the engine and its tests do not need it."""
    if os.environ.get("ENGINE_ALONE"):
        pytest.skip("already alone")
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "bpe_labs.py").write_text("raise ImportError('the engine tests must not import "
                                         "bpe_labs')\n")
    env = {**os.environ, "ENGINE_ALONE": "1",
           "PYTHONPATH": os.pathsep.join([str(blocker), str(HERE)])}
    env.pop("AUTOGRADER_COURSE", None)
    modules = sorted(HERE.glob("test_*.py"))
    assert len(modules) > 10  # this one, the runner's and one per step
    done = subprocess.run([sys.executable, "-m", "pytest", *map(str, modules), "--noconftest", "-q",
                           "-p", "no:cacheprovider", "-o", "addopts=", "-p", "no:nbval", "-p",
                           "no:xdist", "-k", "not need_no_bpe_labs"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    # every test ran and passed (none skipped): one per "def test_" of the modules, less this one
    tests = sum(module.read_text().count("\ndef test_") for module in modules) - 1
    summary = done.stdout.strip().splitlines()[-1]
    assert summary.startswith(f"{tests} passed") and "skipped" not in summary, summary

"""grade._grade, the runner of grade.py's steps: the steps in order until one writes the row; if a
step raises, the kernel is shut and the workdir removed, and the row keeps what was found."""
from __future__ import annotations

import dataclasses
import time

import pytest

from autograder.grading import grade
from autograder.kernel.session import CallTimeout
from autograder.kernel.process import Ending
from autograder.grading.result import GRADER_ERROR, GRADED, NOT_A_NOTEBOOK
from grading_steps import SETTINGS, course, new_grading  # noqa: F401  (course: a fixture)
from toy_course import LAB, RIGHT, submission


def test_the_steps_of_each_mode_in_order():
    assert grade.steps(SETTINGS) == (
        grade.read_the_file, grade.repair_the_notebook, grade.choose_the_cells,
        grade.make_a_workdir, grade.start_the_kernel, grade.run_the_visible_checks,
        grade.note_what_moved, grade.run_the_hidden_tests, grade.shut_the_kernel,
        grade.grade_moved_parts_at_their_places, grade.remove_the_workdir, grade.write_the_row)
    one_kernel = grade.steps(dataclasses.replace(SETTINGS, feedback_kernel=False))
    assert one_kernel == grade.steps(SETTINGS)[:4] + (grade.grade_in_one_kernel,) + (
        grade.remove_the_workdir, grade.write_the_row)


def test_the_runner_stops_at_the_step_that_writes_the_row(course, tmp_path):  # noqa: F811
    path = tmp_path / "other.ipynb"
    path.write_text('{"name": "not a notebook"}')
    grading = new_grading(path)
    row = grade._grade(grading)
    assert row is grading.row and row.status == NOT_A_NOTEBOOK
    assert grading.workdir is None and grading.found.kernels == 0  # no later step ran


def test_a_file_is_graded_by_every_step(course, tmp_path):  # noqa: F811
    grading = new_grading(submission(course, RIGHT, tmp_path / "right.ipynb"))
    row = grade._grade(grading)
    assert (row.status, row.lab, row.score, row.kernels) == (GRADED, LAB, 5, 1)
    assert grading.session is None and grading.workdir is None


def test_a_step_that_fails_before_the_kernel_leaves_no_workdir(course, tmp_path):  # noqa: F811
    # The notebook's time is used up: no kernel starts, after the workdir was made.
    settings = dataclasses.replace(SETTINGS, limits=dataclasses.replace(SETTINGS.limits,
                                                                        notebook_seconds=1))
    path = submission(course, RIGHT, tmp_path / "late.ipynb")
    grading = new_grading(path, settings, started=time.monotonic() - 10)
    with pytest.raises(CallTimeout):
        grade._grade(grading)
    assert grading.workdir is not None and not grading.workdir.exists()
    row = grade._guarded(path, "ada", settings, time.monotonic() - 10)
    assert row.status == GRADER_ERROR and "CallTimeout" in row.message
    assert (row.lab, row.kernels, row.max_score, row.parts) == (LAB, 1, 5, {}) and row.sha256


def test_a_step_that_fails_shuts_the_kernel_and_the_row_keeps_what_was_found(
        course, tmp_path, monkeypatch):  # noqa: F811
    sessions = []

    def broken(grading: grade.Grading) -> None:
        """A step with a bug of ours, after the kernel started and ran the notebook."""
        sessions.append(grading.session)
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(grade, "FEEDBACK_KERNEL", (
        grade.start_the_kernel, grade.run_the_visible_checks, broken))
    path = submission(course, {**RIGHT, "answer_total": "1 / 0"}, tmp_path / "right.ipynb")
    row = grade._guarded(path, "ada", SETTINGS, time.monotonic())
    assert (row.status, row.message) == (
        GRADER_ERROR, "this file could not be graded (RuntimeError: a bug of ours)")
    assert (row.lab, row.kernels, row.parts) == (LAB, 1, {}) and row.isolation
    assert [(event.cell, event.status) for event in row.cells] == [("answer_total", "error")]
    assert row.traceback and "a bug of ours" in row.traceback
    (session,) = sessions
    deadline = time.monotonic() + 30  # shut down in a thread (kernel.py)
    while Ending.SHUT_DOWN not in session.kernel.endings and time.monotonic() < deadline:
        time.sleep(0.1)
    assert session.kernel.endings[-1] is Ending.SHUT_DOWN
    assert not session.workspace.workdir.exists()  # the runner removed the file's workdir

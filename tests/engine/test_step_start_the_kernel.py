"""grade.start_the_kernel: the feedback kernel, started in the workdir, its isolation in the row;
shut down with the grading's kernel exit stack."""
from __future__ import annotations

import time

import pytest

from autograder.grading import grade
from autograder.kernel.session import CallTimeout
from autograder.kernel.process import Ending
from grading_steps import course, in_a_workdir, on_cells  # noqa: F401  (course: a fixture)


def test_the_kernel_starts_in_the_workdir_and_is_shut_with_its_stack(course):  # noqa: F811
    grading = on_cells()
    with in_a_workdir(grading):
        grade.start_the_kernel(grading)
        session = grading.session
        assert session is not None
        assert grading.workdir is not None and (grading.workdir / "grading").is_dir()
        assert grading.found.isolation == session.isolation != ""
        assert session.run_cell("print(6 * 7)", capture=True).stdout.strip() == "42"
        grading.kernel_exit.close()
    deadline = time.monotonic() + 30
    while Ending.SHUT_DOWN not in session.kernel.endings and time.monotonic() < deadline:
        time.sleep(0.1)
    assert Ending.SHUT_DOWN in session.kernel.endings


def test_no_kernel_starts_once_the_notebook_s_time_is_used_up(course):  # noqa: F811
    grading = on_cells(started=time.monotonic() - 1000)  # the limit is 120 s
    with in_a_workdir(grading):
        with pytest.raises(CallTimeout):
            grade.start_the_kernel(grading)
        assert grading.session is None and grading.found.isolation is None

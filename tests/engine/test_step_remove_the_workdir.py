"""grade.remove_the_workdir: the kernels' folder is removed before the row is written."""
from __future__ import annotations

from autograder.grading import grade
from grading_steps import new_grading


def test_the_workdir_is_removed_at_its_step():
    grading = new_grading()
    with grading.workdir_exit:
        grade.make_a_workdir(grading)
        workdir = grading.workdir
        assert workdir is not None
        (workdir / "grading").mkdir()
        grade.remove_the_workdir(grading)
        assert not workdir.exists()  # at the step, not at the end of the block
        assert grading.workdir is None

"""grade.make_a_workdir: a folder for the file's kernels, removed when the grading's exit stack
closes, and the file counted as taking a kernel."""
from __future__ import annotations

from autograder.grading import grade
from grading_steps import new_grading


def test_a_workdir_is_made_and_removed_with_its_exit_stack():
    grading = new_grading()
    assert grading.found.kernels == 0
    with grading.workdir_exit:
        grade.make_a_workdir(grading)
        workdir = grading.workdir
        assert workdir is not None and workdir.is_dir()
        assert grading.found.kernels == 1
        (workdir / "kernel-file").write_text("left by a kernel")
    assert not workdir.exists()

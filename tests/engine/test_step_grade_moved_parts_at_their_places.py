"""grade.grade_moved_parts_at_their_places: when a part moved, every part is graded at its test
cell's place in a second kernel; a moved part keeps the better of its two grades."""
from __future__ import annotations

import time

from autograder.grading import grade
from autograder.grading.result import PartScore, Verdict
from grading_steps import added, answer, check, course, in_a_workdir, on_cells  # noqa: F401
from toy_course import POINTS

FAILED = {part_id: PartScore(part_id, 0, points, "failed after the whole notebook ran",
                             verdict=Verdict.FAILED_CHECK) for part_id, points in POINTS.items()}


def test_nothing_moved_no_second_kernel(course):  # noqa: F811
    grading = on_cells(answer("double"), check("double", ""))
    grading.graded = dict(FAILED)
    grade.grade_moved_parts_at_their_places(grading)
    assert grading.graded == FAILED and grading.found.kernels == 0 and grading.workdir is None


def test_a_moved_part_keeps_its_grade_at_its_place_when_better(course):  # noqa: F811
    grading = on_cells(answer("double"), check("double", ""), answer("total"),
                       check("total", ""), added("def double(x):\n    return 0", 5))
    grading.graded, grading.moved = dict(FAILED), ["double"]
    grading.sent, grading.restarts = ["sent to the first kernel"], 1
    with in_a_workdir(grading):
        grade.grade_moved_parts_at_their_places(grading)
        assert grading.workdir is not None and (grading.workdir / "at-place").is_dir()
    assert grading.found.kernels == 2
    double, total = grading.graded["double"], grading.graded["total"]
    assert (double.score, double.verdict) == (POINTS["double"], Verdict.PASSED)  # at its place
    # not moved: its grade at its place, even where the grade after the whole notebook differs
    assert (total.score, total.verdict) == (POINTS["total"], Verdict.PASSED)
    assert grading.sent[0] == "sent to the first kernel" and len(grading.sent) > 1
    assert grading.restarts == 1


def test_a_helper_defined_below_the_test_earns_the_points_with_a_note(course):  # noqa: F811
    grading = on_cells(answer("double", "def double(x):\n    return helper(x)"),
                       check("double", ""), answer("total"), check("total", ""),
                       added("def helper(x):\n    return 2 * x", 5))
    earned = PartScore("double", POINTS["double"], POINTS["double"], "all checks passed",
                       verdict=Verdict.PASSED)
    grading.graded, grading.moved = {**FAILED, "double": earned}, ["double"]
    with in_a_workdir(grading):
        grade.grade_moved_parts_at_their_places(grading)
    double = grading.graded["double"]
    assert (double.score, double.verdict) == (POINTS["double"], Verdict.PASSED)
    assert double.message == f"{grade.MOVE_IT_UP}; all checks passed"


def test_no_time_left_for_the_second_kernel_every_part_is_out_of_time(course):  # noqa: F811
    grading = on_cells(answer("double"), check("double", ""), started=time.monotonic() - 1000)
    earned = PartScore("double", POINTS["double"], POINTS["double"], "all checks passed",
                       verdict=Verdict.PASSED)
    grading.graded, grading.moved = {**FAILED, "double": earned}, ["double"]
    with in_a_workdir(grading):
        grade.grade_moved_parts_at_their_places(grading)
    assert grading.graded["double"].message == f"{grade.MOVE_IT_UP}; all checks passed"
    total = grading.graded["total"]
    assert (total.score, total.verdict) == (0, Verdict.OUT_OF_TIME)
    assert total.message.startswith("not graded: ")

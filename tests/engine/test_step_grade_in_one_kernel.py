"""grade.grade_in_one_kernel (``--one-kernel``): the notebook and each part's hidden tests at its
test cell's place in one kernel; shown is only what ran before the first hidden input."""
from __future__ import annotations

import dataclasses

from autograder.grading import grade
from autograder.grading.result import Verdict
from grading_steps import (  # noqa: F401  (course: a fixture)
    SETTINGS,
    WRONG_TOTAL,
    added,
    answer,
    check,
    course,
    given,
    in_a_workdir,
    on_cells,
)
from toy_course import POINTS

ONE_KERNEL = dataclasses.replace(SETTINGS, feedback_kernel=False)


def test_only_what_ran_before_the_first_hidden_input_is_shown(course):  # noqa: F811
    grading = on_cells(
        answer("double"), given("1 / 0", "given_division"),
        check("double", 'print("double(2) =", double(2))'),
        answer("total", WRONG_TOTAL), added("raise ValueError('after a hidden input')", 4),
        check("total", 'print("total([1]) =", total([1]))'), settings=ONE_KERNEL)
    with in_a_workdir(grading):
        grade.grade_in_one_kernel(grading)
        assert grading.workdir is not None and (grading.workdir / "at-place").is_dir()
    assert grading.found.exposed and grading.found.kernels == 1
    assert grading.visible == {"double": "double(2) = 4"}  # total's check ran after hidden inputs
    assert [(event.cell, event.status) for event in grading.found.cells] == [
        ("given_division", "error")]
    assert [(p.part_id, p.score, p.verdict) for p in grading.graded.values()] == [
        ("double", POINTS["double"], Verdict.PASSED), ("total", 0, Verdict.FAILED_CHECK)]
    assert grading.sent != [] and grading.restarts == 0 and grading.found.isolation


def test_a_part_failing_at_its_place_is_graded_again_at_the_end(course):  # noqa: F811
    grading = on_cells(answer("double", "def double(x):\n    return helper(x)"),
                       check("double", ""), added("def helper(x):\n    return 2 * x", 3),
                       answer("total"), check("total", ""), settings=ONE_KERNEL)
    with in_a_workdir(grading):
        grade.grade_in_one_kernel(grading)
    double = grading.graded["double"]
    assert (double.score, double.verdict) == (POINTS["double"], Verdict.PASSED)
    assert double.message.startswith(grade.MOVE_IT_UP)

"""grade.run_the_hidden_tests: each part's hidden tests after the whole notebook ran, in the order
the test cells ran, then the parts whose test cell never ran."""
from __future__ import annotations

from autograder.grading import grade
from autograder.grading.result import Verdict
from grading_steps import WRONG_TOTAL, course, in_a_workdir, on_cells  # noqa: F401
from toy_course import POINTS, RIGHT


def test_every_part_is_graded_the_reached_ones_first(course):  # noqa: F811
    grading = on_cells()
    with in_a_workdir(grading):
        grade.start_the_kernel(grading)
        session = grading.session
        assert session is not None
        for source in (RIGHT["answer_double"], WRONG_TOTAL):
            assert session.run_cell(source).status == "ok"
        grading.order = ["double"]  # total's test cell never ran
        grade.run_the_hidden_tests(grading)
        assert session.sent_arguments != []  # hidden inputs were sent
    assert grading.found.exposed
    assert list(grading.graded) == ["double", "total"]
    assert [(p.score, p.verdict) for p in grading.graded.values()] == [
        (POINTS["double"], Verdict.PASSED), (0, Verdict.FAILED_CHECK)]
    assert grading.graded["total"].message == "total adds the doubles"

"""grade.write_the_row: the graded row, each part's message as the student may read it (hidden
inputs redacted from a failed part's message), its visible check, and the score."""
from __future__ import annotations

from autograder.grading import grade
from autograder.grading.intake import Submission
from autograder.grading.result import GRADED, PartScore, Verdict
from grading_steps import course, on_cells  # noqa: F401  (course: a fixture)
from toy_course import LAB, POINTS


def test_the_row_holds_the_parts_as_the_student_may_read_them(course):  # noqa: F811
    grading = on_cells()
    grading.submission = Submission(grading.path, "ada", "0" * 64, lab_id=LAB,
                                    message="graded as handed in")
    grading.graded = {  # in the order the hidden tests ran
        "total": PartScore("total", 0, POINTS["total"], "total(['zebra', 'quagga']) was wrong",
                           verdict=Verdict.FAILED_CHECK),
        "double": PartScore("double", POINTS["double"], POINTS["double"], "zebra passed",
                            verdict=Verdict.PASSED)}
    grading.visible = {"double": "double(2) = 4"}
    grading.sent, grading.restarts = [[["zebra", "quagga"]], {}], 2
    grade.write_the_row(grading)
    row = grading.row
    assert row is not None
    assert (row.status, row.message, row.lab, row.score, row.max_score, row.restarts) == (
        GRADED, "graded as handed in", LAB, POINTS["double"], sum(POINTS.values()), 2)
    assert list(row.parts) == ["double", "total"]  # the lab's order
    assert row.parts["total"].message == "total([hidden input]) was wrong"
    assert row.parts["double"].message == "zebra passed"  # a passed part's words are the grader's
    assert (row.parts["double"].visible_check, row.parts["total"].visible_check) == (
        "double(2) = 4", "")


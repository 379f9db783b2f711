"""grade.run_the_visible_checks: the notebook with its visible checks, in the feedback kernel:
what each check showed, the cells that failed, the parts in the order their test cells ran."""
from __future__ import annotations

from autograder.grading import grade
from grading_steps import added, answer, check, course, given, in_a_workdir, on_cells  # noqa: F401


def test_the_checks_output_and_the_cells_errors_are_what_is_shown(course):  # noqa: F811
    grading = on_cells(
        answer("double"),
        given("1 / 0", "given_division"),
        check("double", 'print("double(2) =", double(2))'),
        check("double", 'print("run twice")'),  # a part's first test cell counts
        added("raise ValueError('my own cell')", 5),
        check("total", "print(total([1]))"),  # total is never defined
        check("not_a_part", 'print("ignored")'),
    )
    with in_a_workdir(grading):
        grade.start_the_kernel(grading)
        grade.run_the_visible_checks(grading)
        assert grading.session is not None and grading.session.sent_arguments == []
    assert grading.order == ["double", "total"]
    assert grading.visible["double"] == "double(2) = 4"
    assert "NameError" in grading.visible["total"] and set(grading.visible) == {"double", "total"}
    assert [(event.cell, event.kind, event.status) for event in grading.found.cells] == [
        ("given_division", "given", "error"), ("added cell 5", "added", "error")]
    assert "ZeroDivisionError" in grading.found.cells[0].error
    assert not grading.found.exposed and grading.graded == {}

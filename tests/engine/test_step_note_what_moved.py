"""grade.note_what_moved: the parts whose hidden tests can reach something a cell below their test
changed."""
from __future__ import annotations

from autograder.grading import grade
from grading_steps import added, answer, check, course, in_a_workdir, on_cells  # noqa: F401


def _moved(*program) -> list[str]:
    grading = on_cells(*program)
    with in_a_workdir(grading):
        grade.start_the_kernel(grading)
        grade.run_the_visible_checks(grading)
        grade.note_what_moved(grading)
    assert grading.order == ["double", "total"]
    return grading.moved


def test_a_function_redefined_below_its_test_moves_its_part_only(course):  # noqa: F811
    cells = [answer("double"), check("double", "double(1)"), answer("total"),
             check("total", "total([1])")]
    assert _moved(*cells) == []
    assert _moved(*cells, added("def total(numbers):\n    return 0", 5)) == ["total"]

"""grade.repair_the_notebook: the lab and its points, the program in the release's shape, and what
repair did, after what intake noted."""
from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell

from autograder.grading import grade
from autograder.grading.intake import Submission
from autograder.grading.result import IntegrityEvent
from grading_steps import course, new_grading  # noqa: F401  (course: a fixture)
from toy_course import LAB, POINTS, RIGHT


def test_the_notebook_is_repaired_into_the_lab_s_program(course):  # noqa: F811
    nb = nbformat.read(course.notebooks / f"{LAB}.ipynb", as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in RIGHT:
            cell.source = RIGHT[grade_id]
    nb.cells.append(new_code_cell("print('a cell of my own')"))
    grading = new_grading()
    grading.submission = Submission(grading.path, "ada", "0" * 64, notebook=nb, lab_id=LAB)
    converted = IntegrityEvent("converted", "-", "converted from nbformat 3 to nbformat 4")
    grading.found.integrity = [converted]
    grade.repair_the_notebook(grading)
    assert grading.lab is not None and grading.lab.lab_id == LAB
    assert grading.found.max_score == sum(POINTS.values())
    assert grading.repaired is not None
    assert [(step.kind, step.cell_id) for step in grading.repaired.program] == [
        ("answer", "answer_double"), ("check", "double"), ("answer", "answer_total"),
        ("check", "total"), ("added", f"added cell {len(nb.cells)}")]
    assert grading.repaired.program[0].source == RIGHT["answer_double"]
    assert grading.found.integrity == [converted, IntegrityEvent(
        "added", f"cell {len(nb.cells)}", "a code cell the release does not have; it was run "
        "where it stood")]

"""A course of one tiny lab, written here, for the engine's own tests: two parts (``double`` 2
points, ``total`` 3 points), hidden tests that use the course interface, and nothing of the BPE
course.

:func:`toy_course` writes its solution notebook and releases the student notebook with the engine's
own release steps (nbgrader's); :func:`submission` fills the student notebook's answer cells.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder import course as course_module
from autograder.course import COURSE_VARIABLE, Course

LAB = "toy_two_parts"
KEY = "toy_course"
POINTS = {"double": 2.0, "total": 3.0}
RIGHT = {"answer_double": "def double(x):\n    return 2 * x",
         "answer_total": "def total(numbers):\n    return sum(double(n) for n in numbers)"}


def _cell(source: str, **nbgrader) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"schema_version": 3, "locked": not nbgrader.get("solution", False),
                                 "solution": False, "grade": False, **nbgrader}
    return cell


def solution_notebook() -> nbformat.NotebookNode:
    nb = new_notebook(cells=[
        new_markdown_cell("# A toy lab\n\nWrite `double(x)`, then `total(numbers)`: the sum of the "
                          "doubles."),
        _cell("def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION",
              solution=True, grade_id="answer_double"),
        _cell('print("double(2) =", double(2))\nassert double(2) == 4\n'
              "### BEGIN HIDDEN TESTS\nfrom autograder.course_interface import call_each\n"
              'assert call_each(double, [(3,), (10,)]) == [6, 20], "double doubles every number"\n'
              "### END HIDDEN TESTS", grade=True, grade_id="double", points=POINTS["double"]),
        _cell("def total(numbers):\n    ### BEGIN SOLUTION\n    return sum(double(n) for n in "
              "numbers)\n    ### END SOLUTION", solution=True, grade_id="answer_total"),
        _cell('print("total([1, 2]) =", total([1, 2]))\n'
              '### BEGIN HIDDEN TESTS\nassert total([5, 6]) == 22, "total adds the doubles"\n### '
              'END HIDDEN TESTS', grade=True, grade_id="total", points=POINTS["total"]),
    ])
    nb.metadata[KEY] = {"lab": LAB, "title": "A toy lab", "order": 1}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    return nb


def make_course(root: Path) -> Course:
    return Course(name="toy", spec="toy_course:never_loaded", root=root,
                  solutions=root / "solutions",
                  notebooks=root / "notebooks", data=root / "data", default_data=root / "data",
                  metadata_key=KEY, data_variable="TOY_COURSE_DATA")


@contextlib.contextmanager
def toy_course(root: Path):
    """The toy course, written in ``root`` (once: a course already written there is used as it is)
    and graded by the engine within the block (the course graded before is put back after it)."""
    course = make_course(root)
    written = (course.notebooks / f"{LAB}.ipynb").exists()
    for folder in (course.solutions, course.notebooks, course.data):
        folder.mkdir(parents=True, exist_ok=True)
    if not written:
        nbformat.write(solution_notebook(), course.solutions / f"{LAB}.ipynb")
    before, variable = course_module._current, os.environ.get(COURSE_VARIABLE)
    course_module.use(course)
    try:
        from autograder.release.student_notebooks import release

        if not written:
            release()
        yield course
    finally:
        course_module._current = before
        if variable is None:
            os.environ.pop(COURSE_VARIABLE, None)
        else:
            os.environ[COURSE_VARIABLE] = variable


def submission(course: Course, answers: dict[str, str], path: Path) -> Path:
    """The student notebook with ``answers`` (answer cell
    id -> source) in its answer cells, at ``path``."""
    nb = nbformat.read(course.notebooks / f"{LAB}.ipynb", as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    nbformat.write(nb, path)
    return path

"""grade.read_the_file: intake's findings in the row, and the row itself for a file that is no
notebook of a known lab."""
from __future__ import annotations

import hashlib

from autograder.grading import grade
from autograder.grading.result import EMPTY, NOT_A_NOTEBOOK, IntegrityEvent
from grading_steps import course, new_grading  # noqa: F401  (course: a fixture)
from toy_course import LAB, RIGHT, submission


def test_a_notebook_of_the_lab_is_read_and_handed_on(course, tmp_path):  # noqa: F811
    path = submission(course, RIGHT, tmp_path / "right.ipynb")
    grading = new_grading(path)
    grade.read_the_file(grading)
    assert grading.row is None  # the next steps grade it
    assert grading.submission is not None and grading.submission.notebook is not None
    found = grading.found
    assert (found.lab, found.status) == (LAB, "ok")
    assert found.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert found.integrity == []


def test_a_notebook_in_an_older_format_is_noted_as_converted(course, tmp_path):  # noqa: F811
    path = tmp_path / "old.ipynb"
    path.write_text('{"nbformat": 3, "nbformat_minor": 0, "metadata": {"toy_course": '
                    '{"lab": "%s"}}, "worksheets": [{"cells": []}]}' % LAB)
    grading = new_grading(path)
    grade.read_the_file(grading)
    assert grading.found.lab == LAB and grading.row is None
    assert grading.found.integrity == [
        IntegrityEvent("converted", "-", "converted from nbformat 3 to nbformat 4")]


def test_a_file_that_is_no_notebook_is_its_own_row(course, tmp_path):  # noqa: F811
    empty, other = tmp_path / "empty.ipynb", tmp_path / "other.ipynb"
    empty.write_bytes(b"")
    other.write_text('{"name": "not a notebook"}')
    rows = []
    for path in (empty, other):
        grading = new_grading(path)
        grade.read_the_file(grading)
        assert grading.row is not None
        rows.append(grading.row)
    assert [(row.status, row.student_id, row.file) for row in rows] == [
        (EMPTY, "ada", str(empty)), (NOT_A_NOTEBOOK, "ada", str(other))]
    assert rows[0].message == "the file is empty" and rows[0].parts == {}
    assert rows[1].sha256 == hashlib.sha256(other.read_bytes()).hexdigest()

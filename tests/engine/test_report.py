"""The reports (autograder/reports/report.py) of a course of its own (toy_course.py): grades.csv
has one column per part of the course, scores written one way, nothing a spreadsheet would run
as a formula, and a feedback page per file that says the student's own text as text."""
from __future__ import annotations

import csv

import pytest

from autograder.reports.report import feedback_html, feedback_path, write_grades_csv
from autograder.grading.result import GRADED, GradeResult, PartScore
from toy_course import LAB, POINTS, toy_course


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    with toy_course(tmp_path_factory.mktemp("toy")) as course:
        yield course


def rows(course, tmp_path):
    results = [
        GradeResult("=HYPERLINK(\"x\")", "amy.ipynb", status=GRADED, lab=LAB, score=5.0,
                    max_score=5, parts={"double": PartScore("double", 2, 2.0, "ok"),
                                        "total": PartScore("total", 3.0, 3, "ok")}),
        GradeResult("ben", "ben<i>.ipynb", status=GRADED, lab=LAB, score=2, max_score=5.0,
                    parts={"double": PartScore("double", 2.0, 2, "ok"),
                           "total": PartScore("total", 0, 3, "<script>no</script>")}),
    ]
    path = tmp_path / "grades.csv"
    write_grades_csv(results, path)
    with open(path, newline="", encoding="utf-8") as handle:
        return results, list(csv.DictReader(handle))


def test_grades_csv_has_a_column_per_part_and_scores_written_one_way(course, tmp_path):
    _, table = rows(course, tmp_path)
    assert set(POINTS) <= set(table[0])
    by_file = {row["file"]: row for row in table}
    assert (by_file["amy.ipynb"]["score"], by_file["amy.ipynb"]["double"]) == ("5", "2")
    assert (by_file["ben<i>.ipynb"]["max_score"], by_file["ben<i>.ipynb"]["total"]) == (
        "5", "0")


def test_a_cell_a_spreadsheet_would_run_is_text(course, tmp_path):
    _, table = rows(course, tmp_path)
    assert {row["student_id"] for row in table} == {"'=HYPERLINK(\"x\")", "ben"}


def test_a_feedback_page_shows_the_students_text_as_text(course, tmp_path):
    results, _ = rows(course, tmp_path)
    page = feedback_html(results[1])
    assert "<script>no</script>" not in page and "ben<i>" not in page
    assert "&lt;script&gt;no&lt;/script&gt;" in page and "ben&lt;i&gt;" in page
    assert tmp_path in feedback_path(tmp_path, results[1]).parents

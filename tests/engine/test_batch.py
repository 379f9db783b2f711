"""A batch (autograder/batch/run.py) over a folder of the toy course (toy_course.py), with no BPE
course: one row per entry, whatever it is, graded in a worker process (workers.py), with
grades.csv and a feedback page per graded file in OUT; a second run grades nothing again."""
from __future__ import annotations

import csv

import pytest

from autograder.batch.run import grade_folder
from autograder.kernel.session import Limits
from autograder.grading.settings import Settings
from toy_course import LAB, POINTS, RIGHT, submission, toy_course

SETTINGS = Settings(limits=Limits(cell_seconds=10, call_seconds=5, notebook_seconds=60),
                    part_seconds=20, feedback_kernel=False)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    with toy_course(tmp_path_factory.mktemp("toy")) as course:
        yield course


def test_a_folder_gets_one_row_per_entry_and_its_reports(course, tmp_path):
    folder = tmp_path / "handed_in"
    folder.mkdir()
    submission(course, RIGHT, folder / f"amy_{LAB}.ipynb")
    submission(course, {**RIGHT, "answer_total": "def total(numbers):\n    return 0"},
               folder / f"ben_{LAB}.ipynb")
    (folder / f"cal_{LAB}.txt").write_text("my answers are in my head\n")
    rows = grade_folder(folder, tmp_path / "out", SETTINGS, workers=1, progress=False)
    by_student = {row.student_id: row for row in rows}
    assert set(by_student) == {"amy", "ben", "cal"}
    assert (by_student["amy"].status, by_student["amy"].score) == ("graded", sum(POINTS.values()))
    assert (by_student["ben"].status, by_student["ben"].score) == ("graded", POINTS["double"])
    assert by_student["cal"].status != "graded" and by_student["cal"].message
    with open(tmp_path / "out" / "grades.csv", newline="", encoding="utf-8") as handle:
        assert sorted(row["student_id"] for row in csv.DictReader(handle)) == ["amy", "ben", "cal"]
    assert len(list((tmp_path / "out").rglob("*.html"))) >= 2
    again = grade_folder(folder, tmp_path / "out", SETTINGS, workers=1, progress=False)
    assert {row.student_id: row.score for row in again} == {
        row.student_id: row.score for row in rows}

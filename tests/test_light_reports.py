"""Reports written without pandas, the class report drawn in
the background, and the imports the command line avoids."""
from __future__ import annotations

import csv
import subprocess
import sys

from autograder.reports import report
from bpe_labs import ROOT as REPO_ROOT
from autograder.labs import get_lab
from autograder.grading.result import GradeResult, PartScore


def graded_result(
    lab_id: str, student: str, scores: list[float], file: str = "", **more
) -> GradeResult:
    parts = {part.part_id: PartScore(part.part_id, score, part.points,
                                     "" if score >= part.points else "not yet")
             for part, score in zip(get_lab(lab_id).parts, scores)}
    return GradeResult(student, file, status="graded", lab=lab_id, parts=parts, score=sum(scores),
                       max_score=get_lab(lab_id).max_score, **more)


def test_grades_csv_without_pandas(tmp_path):
    results = [graded_result("toy_bpe", "bob", [2, 2, 2, 3, 2], "b.ipynb", seconds=1.5),
               graded_result("toy_bpe", "ada", [0, 1, 0, 0, 0], "a.ipynb", message="=cmd()"),
               GradeResult("ada", "x.ipynb", status="invalid_json", message="not JSON")]
    report.write_grades_csv(results, tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == report.grades_columns()
    assert [(row["student_id"], row["lab"], row["status"]) for row in rows] == [
        ("ada", "toy_bpe", "graded"), ("ada", "", "invalid_json"), ("bob", "toy_bpe", "graded")]
    assert rows[0]["error"] == "'=cmd()"  # a spreadsheet shows it as text
    assert [rows[2][part.part_id] for part in get_lab("toy_bpe").parts] == ["2", "2", "2", "3", "2"]
    assert rows[2]["seconds"] == "1.5" and rows[2]["base_vocab"] == ""
    text = report.grades_text(results)
    assert text.startswith("toy_bpe\n") and "\n\n(no lab)\n" in text and "not JSON" in text
    assert "base_vocab" not in text  # a column with no value in the lab is left out


def test_class_report_drawn_in_the_background_is_the_same(tmp_path):
    results = [graded_result("toy_bpe", "ada", [2, 1, 0, 3, 2], "a.ipynb")]
    (tmp_path / "here").mkdir()
    (tmp_path / "there").mkdir()
    report.class_report(results, tmp_path / "here")
    report.class_report(results, tmp_path / "there", report.Painter())
    for name in ("class_report.md", "scores.png"):
        assert (tmp_path / "there" / name).stat().st_size > 0
    assert (tmp_path / "there" / "class_report.md").read_text() == (
        tmp_path / "here" / "class_report.md"
    ).read_text()


def test_the_command_line_modules_import_nothing_heavy():
    """pandas, matplotlib, nbgrader (SQLAlchemy, alembic),
    Dask and tqdm wait until a function needs them."""
    heavy = ["pandas", "matplotlib", "nbgrader", "sqlalchemy", "alembic", "dask", "distributed",
             "tqdm", "nbconvert"]
    code = ("import sys; import autograder.cli, autograder.batch, autograder.reports.report, "
            "autograder.reports.gradebook; "
            f"print(sorted(m for m in {heavy!r} if m in sys.modules))")
    imported = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                              text=True, check=True, env={"PYTHONPATH": str(REPO_ROOT), "PATH": ""})
    assert imported.stdout.strip() == "[]"


def test_a_report_started_early_has_every_row(tmp_path):
    """The painter starts drawing when the last result is in; a report asked for with other rows
    (one more came after all) is drawn again from those rows, never left with the early ones."""
    first = [graded_result("toy_bpe", "ada", [2, 1, 0, 3, 2], "a.ipynb")]
    both = first + [graded_result("toy_bpe", "bob", [0, 0, 0, 0, 0], "b.ipynb")]
    for name, started, asked in [("same", both, both), ("more", first, both)]:
        (tmp_path / name).mkdir()
        painter = report.Painter()
        painter.start(started, tmp_path / name)
        assert (
            report.class_report(asked, tmp_path / name, painter)
            == tmp_path / name / "class_report.md"
        )
        assert "2 files, 2 graded." in (tmp_path / name / "class_report.md").read_text()
        assert painter.background.process is None  # ended after the report

"""Changes a person made by hand in nbgrader's gradebook (formgrader), applied to the autograder's
results.

A TA who opens a submission in formgrader can type a part's score (``manual_score``), add extra
credit, or write a comment on an answer cell. nbgrader keeps these beside the autograder's
``auto_score`` and counts the manual score when it is set. The autograder's own result (in
``OUT/results/``) never changes; every report (grades.csv, feedback, the class report, the LMS
exports) is written from the result with the gradebook's changes applied (:func:`apply`), so a
change made in formgrader reaches them on the next ``grade`` or ``export``.

The gradebook is read with the standard library's sqlite3, read-only: importing nbgrader and
SQLAlchemy would cost the grade command more than a second, and these are four plain joins over
nbgrader's tables (its schema is the same in every 0.9 release; tests/test_formgrader.py checks
what is read here against nbgrader's own API after formgrader wrote it).
"""
from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from autograder.grading.result import GRADED, Adjustment, GradeResult

# (student, lab) -> the changes made by hand to that submission
# (student id, lab): a result's lab is None when it could not be told, and then has none
Adjustments = dict[tuple[str, str | None], list[Adjustment]]

_SUBMISSION = """
    JOIN submitted_notebook ON {table}.notebook_id = submitted_notebook.id
    JOIN submitted_assignment ON submitted_notebook.assignment_id = submitted_assignment.id
    JOIN assignment ON submitted_assignment.assignment_id = assignment.id
    JOIN base_cell ON {table}.cell_id = base_cell.id"""
_SCORES = (
    "SELECT submitted_assignment.student_id, assignment.name, base_cell.name, grade.auto_score, "
    "grade.manual_score, grade.extra_credit FROM grade"
    + _SUBMISSION.format(table="grade")
    + " WHERE grade.manual_score IS NOT NULL OR grade.extra_credit IS NOT NULL"
)
_COMMENTS = (
    "SELECT submitted_assignment.student_id, assignment.name, base_cell.name, "
    "comment.manual_comment FROM comment"
    + _SUBMISSION.format(table="comment")
    + " WHERE comment.manual_comment IS NOT NULL AND trim(comment.manual_comment) != ''"
)


def read(db_path: Path) -> Adjustments:
    """Every change made by hand in the gradebook at ``db_path`` (none if it does not exist yet)."""
    db_path = Path(db_path)
    if not db_path.is_file():
        return {}
    found: Adjustments = defaultdict(list)
    connection = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        for student, lab, cell, auto, manual, extra in connection.execute(_SCORES):
            score = (manual if manual is not None else auto or 0.0) + (extra or 0.0)
            if score != auto:  # a score typed in equal to the autograder's changes nothing
                found[(student, lab)].append(Adjustment(cell, auto_score=auto, score=score))
        for student, lab, cell, comment in connection.execute(_COMMENTS):
            found[(student, lab)].append(Adjustment(cell, comment=comment.strip()))
    except sqlite3.DatabaseError as error:  # not a gradebook, or one of another schema
        raise ValueError(f"{db_path} could not be read as nbgrader's gradebook ({error})") from None
    finally:
        connection.close()
    return dict(found)


def apply(result: GradeResult, adjustments: list[Adjustment]) -> GradeResult:
    """``result`` as the gradebook has it: each part a person scored by hand counts that score, the
    total is the sum of the parts, and the changes are listed in ``result.adjustments``."""
    if not result.graded or not adjustments:
        return result
    parts = dict(result.parts)
    kept = []
    for adjustment in adjustments:
        if adjustment.score is not None:
            if adjustment.cell not in parts:  # a cell the lab no longer grades
                continue
            parts[adjustment.cell] = replace(parts[adjustment.cell], score=adjustment.score)
        kept.append(adjustment)
    total = round(sum(part.score for part in parts.values()), 6)
    return replace(result, parts=parts, score=total, adjustments=kept)


def apply_all(results: list[GradeResult], adjustments: Adjustments) -> list[GradeResult]:
    """Every result with the changes made by hand to its submission (graded results only)."""
    return [
        apply(result, adjustments.get((result.student_id, result.lab), []))
        if result.status == GRADED
        else result
        for result in results
    ]


def from_gradebook(results: list[GradeResult], db_path: Path) -> list[GradeResult]:
    """``results`` with the changes made by hand in the gradebook at ``db_path``."""
    return apply_all(results, read(db_path))


def for_reports(results: list[GradeResult], db_path: Path) -> list[GradeResult]:
    """:func:`from_gradebook`, or ``results`` as they are (and one line on stderr) if the gradebook
    cannot be read: the reports are written either way."""
    import sys

    try:
        return from_gradebook(results, db_path)
    except ValueError as error:
        print(f"note: the reports show the autograder's scores only: {error}", file=sys.stderr)
        return results

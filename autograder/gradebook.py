"""Record results in nbgrader's gradebook (the embedded SQLite database by default).

Scores go where ``nbgrader autograde`` would put them, so ``nbgrader export``, formgrader and
the rest of nbgrader's tooling see them. Only the main process writes: workers return plain data.
"""
from __future__ import annotations

from pathlib import Path

from nbgrader.api import Gradebook

from autograder.build import db_url_for, register_labs
from autograder.labs import get_lab


def prepare(db_path: Path) -> None:
    """Create the gradebook if needed and register every lab's graded cells (idempotent)."""
    register_labs(db_path)


def record(db_path: Path, result: dict) -> None:
    """Write one graded result: the student, the submission, and each part's auto score."""
    if result.get("status") != "graded":
        return
    lab = get_lab(result["lab"])
    with Gradebook(db_url_for(db_path)) as gradebook:
        gradebook.update_or_create_student(result["student_id"])
        gradebook.update_or_create_submission(lab.lab_id, result["student_id"])
        for part_id, part in result["parts"].items():
            grade = gradebook.find_grade(part_id, lab.lab_id, lab.lab_id, result["student_id"])
            grade.auto_score = part["score"]
            grade.needs_manual_grade = False
        gradebook.db.commit()


def total_scores(db_path: Path) -> dict[tuple[str, str], float]:
    """(student, lab) -> score, as nbgrader computes it from the gradebook."""
    scores = {}
    with Gradebook(db_url_for(db_path)) as gradebook:
        for assignment in gradebook.assignments:
            for submission in assignment.submissions:
                scores[(submission.student_id, assignment.name)] = submission.score
    return scores

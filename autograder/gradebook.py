"""Record results in nbgrader's gradebook (the embedded SQLite database by default).

Scores go where ``nbgrader autograde`` would put them, so ``nbgrader export``, formgrader and
the rest of nbgrader's tooling see them. Only the main process writes: workers return plain data.
"""
from __future__ import annotations

import warnings
from pathlib import Path

from nbgrader import api as nbgrader_api
from nbgrader.api import Gradebook, MissingEntry
from sqlalchemy.exc import SAWarning

from autograder.build import db_url_for, register_labs
from autograder.labs import all_labs, get_lab


def _alembic_head() -> str:
    """nbgrader's current schema revision, read in-process.

    nbgrader asks a new ``alembic heads`` process for it when it creates a gradebook (3 CPU-s,
    and the venv's bin/ on PATH); the answer is the same read from its migration scripts here.
    """
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite://") as ini:
        return ScriptDirectory.from_config(Config(ini)).get_current_head()


def _registered(gradebook: Gradebook, lab) -> bool:
    """Is the lab in the gradebook with exactly these graded parts and points?"""
    try:
        notebook = gradebook.find_notebook(lab.lab_id, lab.lab_id)
    except MissingEntry:
        return False
    return {(c.name, c.max_score) for c in notebook.grade_cells} == {(p.part_id, p.points) for p in lab.parts}


def prepare(db_path: Path, lab_ids: list[str] | None = None) -> None:
    """Create the gradebook if needed and register the labs' graded cells (only those missing)."""
    nbgrader_api.get_alembic_version = _alembic_head
    labs = [get_lab(lab_id) for lab_id in lab_ids] if lab_ids is not None else list(all_labs().values())
    with Gradebook(db_url_for(db_path)) as gradebook:
        missing = [lab for lab in labs if not _registered(gradebook, lab)]
    if missing:
        register_labs(db_path, missing)


def record(db_path: Path, result: dict) -> None:
    """Write one graded result: the student, the submission, and each part's auto score."""
    if result.get("status") != "graded":
        return
    lab = get_lab(result["lab"])
    with Gradebook(db_url_for(db_path)) as gradebook, warnings.catch_warnings():
        # nbgrader's own submission code trips SQLAlchemy's autoflush warning; the rows are right.
        warnings.simplefilter("ignore", SAWarning)
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

"""Stored results as the engine's typed :class:`~autograder.grading.result.GradeResult`: every
attempt, the attempt that counts (the last graded one, or the best), and the files made from them
with the engine's own report code (``grades.csv``, the nbgrader gradebook, the class report).

For tools that read the service's database (an LMS export, say)::

    from autograder.service.results import counted_results
    # list[GradeResult], one per student and lab
    results = counted_results("out/service.db", counted="best")
"""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import undefer

from autograder.grading.result import GradeResult
from autograder.service.database import Database
from autograder.service.models import GRADED, Submission
from autograder.service.settings import COUNTED

LATE_NOTE = "late submission"


def grade_result(row: Submission) -> GradeResult | None:
    """The result stored for a submission (None while it waits), with a late submission said so in
    ``identity``, as the batch says it of a Canvas ``LATE`` file."""
    if not row.result:
        return None
    result = GradeResult.from_json(json.loads(row.result))
    if row.late:
        from dataclasses import replace

        result = replace(result, identity="; ".join(filter(None, [result.identity, LATE_NOTE])))
    return result


def attempts(
    session, student_id: str | None = None, lab: str | None = None, with_results: bool = True
) -> list[Submission]:
    """Submissions, newest first (of one student, of one lab, or all)."""
    query = select(Submission).order_by(Submission.created_at.desc(), Submission.id.desc())
    if student_id is not None:
        query = query.where(Submission.student_id == student_id)
    if lab is not None:
        query = query.where(Submission.lab == lab)
    if with_results:
        query = query.options(undefer(Submission.result))
    return list(session.scalars(query))


def counted_attempts(
    rows: list[Submission], policy: str = "last"
) -> dict[tuple[str, str], Submission]:
    """(student, lab) -> the submission that counts among the graded ones: the last, or the best
    (the highest score; of equal scores, the last)."""
    if policy not in COUNTED:
        raise ValueError(f"the counted attempt is one of {', '.join(COUNTED)}, not {policy!r}")
    chosen: dict[tuple[str, str], Submission] = {}
    for row in rows:
        if row.status != GRADED:
            continue
        key = (row.student_id, row.lab)
        best = chosen.get(key)
        order = (
            (row.created_at, row.id)
            if policy == "last"
            else (row.score or 0, row.created_at, row.id)
        )
        if best is None or order > (
            (best.created_at, best.id)
            if policy == "last"
            else (best.score or 0, best.created_at, best.id)
        ):
            chosen[key] = row
    return chosen


def counted_results(
    database: Database | str, counted: str = "last", lab: str | None = None
) -> list[GradeResult]:
    """The counted attempt (``last`` or ``best``) of every student and lab as GradeResults, by
    student and lab; ``database``: a :class:`Database`, or what ``--db`` takes (a path or a URL)."""
    db = Database(database) if isinstance(database, str) else database
    try:
        with db.reading() as session:
            chosen = counted_attempts(attempts(session, lab=lab), counted)
            results = [grade_result(chosen[key]) for key in sorted(chosen)]
            # a graded submission always has its result
            return [result for result in results if result is not None]
    finally:
        if isinstance(database, str):
            db.close()


def write_grades_csv(results: list[GradeResult], path: Path) -> Path:
    from autograder.reports.report import write_grades_csv as write

    write(results, Path(path))
    return Path(path)


def write_gradebook(results: list[GradeResult], path: Path) -> Path:
    """nbgrader's gradebook (SQLite) holding these results, as ``grade`` writes it."""
    from autograder.reports import gradebook

    labs = sorted({result.lab for result in results if result.lab})
    gradebook.prepare(Path(path), labs or None)
    for result in results:
        gradebook.record(Path(path), result)
    return Path(path)


def grading_seconds(session, last: int = 50) -> list[float]:
    """Grading times of the last graded submissions."""
    return [
        seconds
        for seconds in session.scalars(
            select(Submission.seconds)
            .where(Submission.seconds.is_not(None))
            .order_by(Submission.finished_at.desc())
            .limit(last)
        )
    ]


def waits(session, last: int = 50) -> list[float]:
    """Seconds from submission to result of the last finished submissions (students' own, not
    re-grades)."""
    rows = session.execute(
        select(Submission.created_at, Submission.finished_at)
        .where(Submission.finished_at.is_not(None), Submission.regrades == 0)
        .order_by(Submission.finished_at.desc())
        .limit(last)
    ).all()
    return [max((finished - created) / timedelta(seconds=1), 0.0) for created, finished in rows]

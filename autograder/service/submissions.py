"""Taking a submission in: the checks a notebook passes before it is queued, each refusal a clear
answer that stores nothing. Before any of them, ``admission.py`` bounds what the upload may cost
(one at a time per student, refusals counted against the rate, a parse budget).

1. intake (the engine's ``read_submission``): a file that is not a notebook of a lab is refused with
   the command line's status word (``invalid_json``, ``not_a_notebook``, ``unknown_lab``...);
2. the lab's deadline: a late submission is marked, or refused (a setting per lab);
3. the rate limit: at most N submissions per student per lab in a sliding window; the answer says
   when the next one is allowed;
4. one at a time: a student's submission of a lab waits for the result of their previous one
   (a unique key in the database decides, so two requests at once cannot both pass).
"""
from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from statistics import median
from typing import Sequence

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from autograder.grading.intake import read_submission
from autograder.grading.result import CellKind, Status
from autograder.service import queue
from autograder.service.admission import file_too_costly
from autograder.service.database import Database
from autograder.service.models import ERROR, GRADED, PENDING, QUEUED, Submission
from autograder.service.results import grading_seconds
from autograder.service.settings import ServiceSettings, now


@dataclass
class Refused(Exception):
    """A submission that is not taken: the HTTP status, what to tell the student, a word for
    programs."""

    status_code: int
    detail: str
    word: str
    headers: dict[str, str] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return self.detail


def safe_file_name(name: str | None) -> str:
    """The uploaded file's name as shown back: its last path part, printable, at most 200
    characters.

    >>> safe_file_name("C:\\\\Users\\\\ann\\\\toy_bpe (1).ipynb")
    'toy_bpe (1).ipynb'
    >>> safe_file_name("../../etc/passwd")
    'passwd'
    >>> safe_file_name("")
    'notebook.ipynb'
    """
    name = re.split(r"[\\\\/]", name or "")[-1]
    name = "".join(ch for ch in unicodedata.normalize("NFC", name) if ch.isprintable()).strip()
    return name[:200] or "notebook.ipynb"


def _when(moment) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def window_text(seconds: float) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return unit if count == 1 else f"{count} {unit}s"
    return f"{seconds:g} seconds"


def expected_wait(session, slots: int = 1) -> int:
    """Seconds a new job is likely to wait for its result: the queue ahead times the usual grading
    time."""
    recent = grading_seconds(session, 20)
    usual = median(recent) if recent else 10.0
    waiting = session.query(Submission).filter(Submission.status.in_(PENDING)).count()
    return max(2, math.ceil(usual * (1 + waiting / max(slots, 1))))


def grading_used(session, student_id: str) -> float:
    """Seconds of grading the student's own notebooks used in the last hour (the fair queue's
    measure, ``queue.usage``)."""
    return queue.usage(session, {student_id}).get(student_id, 0.0)


def over_budget(session, settings: ServiceSettings, student_id: str) -> tuple[float, int] | None:
    """(seconds used, seconds until the student is under budget again) if the student has used
    their grading budget, else None."""
    if not settings.grading_budget:
        return None
    used = grading_used(session, student_id)
    if used < settings.grading_budget:
        return None
    moment = now()
    finished = session.execute(
        select(Submission.finished_at, Submission.seconds)
        .where(Submission.student_id == student_id, Submission.priority == 0,
               Submission.finished_at >= moment - queue.USAGE_WINDOW,
               Submission.seconds.is_not(None), Submission.status.in_((GRADED, ERROR)))
        .order_by(Submission.finished_at)
    ).all()
    left, retry = used, 60.0
    for finished_at, seconds in finished:  # the oldest leave the window first
        left -= seconds
        retry = (finished_at + queue.USAGE_WINDOW - moment).total_seconds()
        if left < settings.grading_budget:
            break
    return used, max(1, math.ceil(retry))


def budget_check(db: Database, settings: ServiceSettings, student_id: str) -> None:
    """Raise :class:`Refused` if the student has used their grading time for the hour."""
    with db.reading() as session:
        spent = over_budget(session, settings, student_id)
    if spent is not None:
        used, retry = spent
        raise Refused(
            429,
            f"your notebooks have used {used / 60:.1f} minutes of grading in the last hour, the "
            f"most each student gets ({settings.grading_budget / 60:g} minutes), so that every "
            f"classmate gets graded: you can submit again in {retry} s",
            "grading_budget",
            {"Retry-After": str(retry)},
            {"retry_after": retry},
        )


def accept(
    db: Database,
    settings: ServiceSettings,
    student_id: str,
    path: Path,
    file_name: str,
    refused: Sequence[datetime] = (),
) -> Submission:
    """Queue the notebook at ``path`` for ``student_id``, or raise :class:`Refused`. ``refused``:
    when the student's uploads were refused in the rate's window (they count against it)."""
    budget_check(db, settings, student_id)
    too_costly = file_too_costly(path)
    if too_costly is not None:
        raise Refused(422, f"this file cannot be graded: {too_costly}", Status.NOT_A_NOTEBOOK)
    intake = read_submission(path, student_id)
    if intake.status != Status.OK or intake.lab_id is None:  # (ok: the lab is known)
        raise Refused(422, f"this file cannot be graded: {intake.message}", intake.status)
    lab = intake.lab_id
    created = now()
    deadline = settings.deadlines.get(lab)
    late = deadline is not None and created > deadline.due
    if deadline is not None and late and deadline.late == "refuse":
        raise Refused(
            403,
            f"the deadline for {lab} was {_when(deadline.due)}; late submissions of this lab are "
            "not accepted: ask your instructor",
            "late",
            extra={"deadline": deadline.due.isoformat() + "Z"},
        )
    data = Path(path).read_bytes()
    try:
        with db.writing() as session:
            if settings.rate_limit:
                since = created - timedelta(seconds=settings.rate_window)
                times = sorted([moment for moment in refused if moment > since] + list(
                    session.scalars(
                        select(Submission.created_at)
                        .where(
                            Submission.student_id == student_id,
                            Submission.lab == lab,
                            Submission.created_at > since,
                        )
                        .order_by(Submission.created_at)
                    )
                ))
                if len(times) >= settings.rate_limit:
                    allowed = times[len(times) - settings.rate_limit] + timedelta(
                        seconds=settings.rate_window
                    )
                    retry = max(1, math.ceil((allowed - created).total_seconds()))
                    raise Refused(
                        429,
                        f"you have handed in {lab} {len(times)} times in the last "
                        f"{window_text(settings.rate_window)}"
                        + (f" (counting {len(refused)} refused uploads)" if refused else "")
                        + ", the most allowed: you can submit again "
                        f"at {_when(allowed)} (in {retry} s)",
                        "rate_limited",
                        {"Retry-After": str(retry)},
                        {"retry_after": retry, "next_allowed_at": allowed.isoformat() + "Z"},
                    )
            row = Submission(
                student_id=student_id,
                lab=lab,
                file_name=safe_file_name(file_name),
                sha256=intake.sha256,
                size=len(data),
                notebook=data,
                created_at=created,
                late=late,
                status=QUEUED,
                priority=0,
                pending_key=f"{student_id}/{lab}",
                claims=0,
                regrades=0,
            )
            session.add(row)
            session.flush()
    except IntegrityError:
        with db.reading() as session:
            pending = session.scalars(
                select(Submission).where(Submission.pending_key == f"{student_id}/{lab}")
            ).first()
            retry = expected_wait(session)
        number = f" #{pending.id}" if pending is not None else ""
        raise Refused(
            429,
            f"your submission{number} of {lab} is still waiting for its result: one submission of "
            f"a lab at a time, so wait for it, then submit again (try in about {retry} s)",
            "one_at_a_time",
            {"Retry-After": str(retry)},
            {"retry_after": retry, "pending": pending.id if pending else None},
        ) from None
    return row


def describe(session, row: Submission, feedback: bool = True) -> dict:
    """The API's JSON for one submission (see docs/SERVICE.md)."""
    from autograder.service.results import grade_result

    result = grade_result(row) if row.status not in PENDING else None
    data = {
        "id": row.id,
        "status": row.status,
        "lab": row.lab,
        "score": row.score,
        "max_score": row.max_score,
        "parts": {part_id: part.score for part_id, part in result.parts.items()} if result else {},
        "feedback_html": None,
        "error": row.error,
        "position": queue.position(session, row),
        "file_name": row.file_name,
        "late": row.late,
        "submitted_at": row.created_at.isoformat() + "Z",
        "graded_at": row.finished_at.isoformat() + "Z"
        if row.finished_at and row.status not in PENDING
        else None,
        "grading_seconds": row.seconds if row.status not in PENDING else None,
    }
    if result is not None:
        data["feedback"] = [
            {
                "part": part_id,
                "score": part.score,
                "max_score": part.max_score,
                "message": part.message,
                "visible_check": part.visible_check,
            }
            for part_id, part in result.parts.items()
        ]
        data["cells"] = [
            {"cell": cell.cell, "kind": cell.kind, "status": cell.status, "error": cell.error}
            for cell in result.cells
            if cell.kind != CellKind.GIVEN
        ]
        if feedback:
            from autograder.reports.report import feedback_html

            data["feedback_html"] = feedback_html(result)
    return data

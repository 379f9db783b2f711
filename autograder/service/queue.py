"""The durable queue: the submissions table is the queue, so a job survives anything but the
database.

The order is fair (docs/SERVICE.md, "The queue"): a student holds one grading slot at most, and
the next job is the oldest of the student who used the least grading time in the last hour; it is
computed from the table alone, so a restart keeps it.

A grading process *claims* a queued submission with one conditional ``UPDATE`` (only one claimer can
win it, on SQLite and on PostgreSQL alike), grades it, and *finishes* it with another that writes
its one result, only if it still holds the claim. A claim is counted: a job whose grading process
died (killed, out of memory, the whole server killed) goes back to the queue once; lost a second
time, it gets an error result (``worker_lost``). A job whose whole grading process ended (the
server killed or crashed, the machine restarted) was not lost by its notebook: it goes back
uncounted (up to :data:`INTERRUPTIONS_ALLOWED` times). A dead claimer is recognised by its
heartbeat, or, on the same machine, at once by its process being gone.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

import psutil
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from autograder.grading.result import GRADED as GRADED_STATUS, WORKER_LOST, GradeResult
from autograder.service.database import Database, rowcount
from autograder.service.models import ERROR, GRADED, GRADING, QUEUED, Grader, LtiLink, Submission
from autograder.service.settings import now

# a job is graded at most twice: once, and once more if its grading process was lost
CLAIMS_ALLOWED = 2
# a job whose whole grading process ended (server killed, crashed) goes back uncounted this often
INTERRUPTIONS_ALLOWED = 3
LEASE = timedelta(seconds=60)  # a grader on another machine unseen this long is taken for dead
USAGE_WINDOW = timedelta(hours=1)  # "recently": the fair order's and the grading budget's window
# the fair order counts grading time in these: a class's few seconds each are equal (first come,
# first served); a sleeper's minute, or a script's dozens of gradings, go after
USAGE_QUANTUM = timedelta(seconds=30)


@dataclass(frozen=True)
class Job:
    id: int
    student_id: str
    lab: str
    file_name: str
    notebook: bytes
    claims: int  # this claim included


def register(db: Database, grader_id: str, kind: str, workers: int) -> None:
    """A grading process says it exists (not ready yet)."""
    process = psutil.Process()
    with db.writing() as session:
        session.add(
            Grader(
                id=grader_id,
                host=socket.gethostname(),
                pid=process.pid,
                process_started=process.create_time(),
                kind=kind,
                workers=workers,
                started_at=now(),
                last_seen=now(),
                ready=False,
                stopped=False,
            )
        )


def heartbeat(db: Database, grader_id: str, ready: bool = True, workers: int | None = None
              ) -> None:
    """The grading process is alive; ``workers``: how many workers it can grade on now (a Dask
    cluster's that passed the check; 0: none, and /health says 503)."""
    values: dict = {"last_seen": now(), "ready": ready}
    if workers is not None:
        values["workers"] = workers
    with db.writing() as session:
        session.execute(update(Grader).where(Grader.id == grader_id).values(**values))


def stopped(db: Database, grader_id: str) -> None:
    with db.writing() as session:
        session.execute(
            update(Grader).where(Grader.id == grader_id).values(stopped=True, ready=False)
        )


def alive(grader: Grader | None) -> bool:
    """Is this grading process still there?"""
    if grader is None or grader.stopped:
        return False
    if grader.host == socket.gethostname():
        try:
            return abs(psutil.Process(grader.pid).create_time() - grader.process_started) < 1e-3
        except psutil.Error:
            return False
    return now() - grader.last_seen < LEASE


def usage(session, students: set[str] | None = None) -> dict[str, float]:
    """Seconds of grading each student's own submissions used in the last :data:`USAGE_WINDOW`:
    those finished in it, and the time so far of those being graded (re-grades are the
    instructor's, not counted)."""
    moment = now()
    finished = (
        select(Submission.student_id, func.sum(Submission.seconds))
        .where(Submission.priority == 0, Submission.status.in_((GRADED, ERROR)),
               Submission.finished_at >= moment - USAGE_WINDOW, Submission.seconds.is_not(None))
        .group_by(Submission.student_id)
    )
    grading = select(Submission.student_id, Submission.claimed_at).where(
        Submission.priority == 0, Submission.status == GRADING, Submission.claimed_at.is_not(None))
    if students is not None:
        finished = finished.where(Submission.student_id.in_(students))
        grading = grading.where(Submission.student_id.in_(students))
    used: dict[str, float] = {student: float(seconds or 0)
                              for student, seconds in session.execute(finished).all()}
    for student, claimed_at in session.execute(grading).all():
        used[student] = used.get(student, 0.0) + max(0.0, (moment - claimed_at).total_seconds())
    return used


def _order(
    session, grading: set[str] | None = None
) -> list[tuple[tuple[int, int, bool, int], int, str, str]]:
    """The queued jobs in the order they are claimed, each with its sort key: students' own before
    re-grades; then the student who used the least grading time recently, in whole
    :data:`USAGE_QUANTUM`; then, among equals, students with no job being graded (the others wait
    for their one slot: :func:`claim` passes them by); then the oldest job.

    Counted in quanta, every student who used a few seconds (an honest class at a deadline) is
    served first come, first served; counted exactly, a student with two graded notebooks (2 s)
    waited behind every newcomer's (0 s) for as long as newcomers kept coming. ``grading``: the
    students with a job being graded, when the caller has them already."""
    queued = session.execute(
        select(Submission.id, Submission.student_id, Submission.lab, Submission.priority)
        .where(Submission.status == QUEUED)
    ).all()
    if not queued:
        return []
    students = {row.student_id for row in queued}
    used = usage(session, students)
    if grading is None:
        grading = set(session.scalars(select(Submission.student_id).where(
            Submission.status == GRADING, Submission.student_id.in_(students))))
    return sorted(
        (
            (
                row.priority,
                int(used.get(row.student_id, 0.0) // USAGE_QUANTUM.total_seconds()),
                row.student_id in grading,
                row.id,
            ),
            row.id,
            row.student_id,
            row.lab,
        )
        for row in queued
    )


def claim(db: Database, grader_id: str) -> Job | None:
    """The next job (see :func:`_order`), now claimed by ``grader_id``. A student holds one grading
    slot at most: the unique ``grading_key`` (their id while one of their jobs is graded) makes a
    second claim fail, on SQLite and PostgreSQL alike, however many graders claim at once."""
    with db.reading() as session:
        grading = set(session.scalars(select(Submission.student_id)
                                      .where(Submission.status == GRADING)))
        candidates, seen = [], set(grading)
        for _, job_id, student_id, lab in _order(session, grading):
            if student_id not in seen:
                seen.add(student_id)
                candidates.append((job_id, student_id, lab))
            if len(candidates) >= 20:
                break
    for job_id, student_id, _lab in candidates:
        try:
            with db.writing() as session:
                won = rowcount(session.execute(
                    update(Submission)
                    .where(Submission.id == job_id, Submission.status == QUEUED)
                    .values(
                        status=GRADING,
                        claimed_by=grader_id,
                        claimed_at=now(),
                        claims=Submission.claims + 1,
                        grading_key=student_id,
                        worker_pid=None,
                    )
                ))
                row = session.get(Submission, job_id, options=[]) if won else None
                if row is not None:  # (won: the row is there, claimed in this transaction)
                    return Job(
                        row.id, row.student_id, row.lab, row.file_name, row.notebook, row.claims
                    )
        except IntegrityError:  # this student has a job being graded right now: the next one
            continue
    return None


def adopt(db: Database, grader_id: str, job_id: int) -> Job | None:
    """The job, now held by ``grader_id`` with its claim unchanged, if it is being graded for a
    grading process that is gone (its Dask task still runs: adopted, not graded again); else
    None."""
    with db.reading() as session:
        row = session.get(Submission, job_id)
        if row is None or row.status != GRADING:
            return None
        claimer = row.claimed_by
        if claimer == grader_id:
            return Job(row.id, row.student_id, row.lab, row.file_name, b"", row.claims)
        if claimer is not None and alive(session.get(Grader, claimer)):
            return None
    with db.writing() as session:
        won = rowcount(session.execute(
            update(Submission)
            .where(Submission.id == job_id, Submission.status == GRADING,
                   Submission.claimed_by.is_(None) if claimer is None
                   else Submission.claimed_by == claimer)
            .values(claimed_by=grader_id)
        ))
    if not won:
        return None
    return Job(row.id, row.student_id, row.lab, row.file_name, b"", row.claims)


def set_worker(db: Database, job_id: int, pid: int | None) -> None:
    """Which process grades the job (shown to instructors; tests kill it)."""
    with db.writing() as session:
        session.execute(update(Submission).where(Submission.id == job_id).values(worker_pid=pid))


def _outcome(result: GradeResult) -> dict:
    graded = result.status == GRADED_STATUS
    return {
        "status": GRADED if graded else ERROR,
        "result": json.dumps(result.to_json()),
        "score": result.score if graded else None,
        "max_score": result.max_score,
        "error": None if graded else (result.message or result.status),
        "seconds": result.seconds,
        "finished_at": now(),
        "pending_key": None,
        "grading_key": None,
        "worker_pid": None,
    }


def finish(db: Database, grader_id: str, job_id: int, result: GradeResult) -> bool:
    """Record the job's one result, if ``grader_id`` still holds it. Returns whether it did."""
    with db.writing() as session:
        kept = bool(
            rowcount(session.execute(
                update(Submission)
                .where(
                    Submission.id == job_id,
                    Submission.status == GRADING,
                    Submission.claimed_by == grader_id,
                )
                .values(**_outcome(result))
            ))
        )
        # the LMS gradebook's copy of this student's lab is out of date (LTI: lti/scores.py posts
        # it)
        if kept:
            student_id, lab = session.execute(
                select(Submission.student_id, Submission.lab).where(Submission.id == job_id)
            ).one()
            session.execute(
                update(LtiLink)
                .where(LtiLink.student_id == student_id, LtiLink.lab == lab)
                .values(wanted=LtiLink.wanted + 1)
            )
        return kept


def lost_result(job: Job | Submission, reason: str, message: str | None = None) -> GradeResult:
    return GradeResult(
        job.student_id,
        job.file_name,
        status=WORKER_LOST,
        lab=job.lab,
        message=message or f"grading this notebook stopped its grading process twice ({reason}); "
                           "please tell your instructor",
    )


def lost(db: Database, grader_id: str, job: Job, reason: str) -> str:
    """The job's grading process was lost: back to the queue if it had one claim, else its error
    result. Returns ``queued`` or ``error``."""
    if job.claims < CLAIMS_ALLOWED:
        with db.writing() as session:
            session.execute(
                update(Submission)
                .where(
                    Submission.id == job.id,
                    Submission.status == GRADING,
                    Submission.claimed_by == grader_id,
                )
                .values(status=QUEUED, claimed_by=None, grading_key=None, worker_pid=None)
            )
        return QUEUED
    finish(db, grader_id, job.id, lost_result(job, reason))
    return ERROR


def give_back(db: Database, grader_id: str, job_id: int) -> None:
    """Return a claimed job to the queue without counting the claim (the grader stops, not the job's
    fault)."""
    with db.writing() as session:
        session.execute(
            update(Submission)
            .where(
                Submission.id == job_id,
                Submission.status == GRADING,
                Submission.claimed_by == grader_id,
            )
            .values(
                status=QUEUED,
                claimed_by=None,
                grading_key=None,
                worker_pid=None,
                claims=Submission.claims - 1,
            )
        )


def recover_orphans(db: Database) -> list[tuple[int, str]]:
    """Jobs claimed by a grading process that is gone: queued again without counting the claim, or,
    interrupted so more than :data:`INTERRUPTIONS_ALLOWED` times, given their error result. Returns
    (job id, what became of it)."""
    with db.reading() as session:
        claimed = session.execute(select(Submission.id, Submission.claimed_by)
                                  .where(Submission.status == GRADING)).all()
        graders = {grader.id: grader for grader in session.scalars(
            select(Grader).where(Grader.id.in_({claimer for _, claimer in claimed if claimer})))}
    done: list[tuple[int, str]] = []
    for job_id, claimer in claimed:
        if alive(graders.get(claimer) if claimer is not None else None):
            continue
        with db.writing() as session:
            row = session.get(Submission, job_id)
            if row is None or row.status != GRADING or row.claimed_by != claimer:
                continue
            # the grading process ended (the server was killed or crashed, the machine restarted):
            # not the notebook's doing as far as anyone knows, so not counted against it, a few
            # times; its own worker's death is (``lost``)
            if row.interruptions < INTERRUPTIONS_ALLOWED:
                row.status, row.claimed_by, row.grading_key, row.worker_pid = (
                    QUEUED,
                    None,
                    None,
                    None,
                )
                row.claims, row.interruptions = max(0, row.claims - 1), row.interruptions + 1
                done.append((job_id, QUEUED))
            else:
                message = (f"the grading service was interrupted {row.interruptions + 1} times "
                           "while it graded this notebook; please tell your instructor")
                for name, value in _outcome(lost_result(row, "", message)).items():
                    setattr(row, name, value)
                done.append((job_id, ERROR))
    with db.writing() as session:  # graders known dead are marked so
        for grader in graders.values():
            if not alive(grader) and not grader.stopped:
                grader.stopped = True
                session.merge(grader)
    return done


# Seconds a computed order answers position(): at a deadline every waiting student's page asks
# several times a second in all, and each order reads the queue and everyone's recent grading time
# (measured: the web process's CPU went into little else, and grew with the queue).
PLACES_FRESH = 1.0
_places: dict[int, tuple[float, dict[int, int]]] = {}  # per engine: (when, {job id: place})
_places_lock = threading.Lock()


def _places_now(session, fresh: bool) -> dict[int, int]:
    """{queued job id: its place}, computed at most once per :data:`PLACES_FRESH` seconds per
    database (``fresh``: now)."""
    engine = id(session.get_bind())
    moment = time.monotonic()
    with _places_lock:
        kept = _places.get(engine)
        if kept is not None and not fresh and moment - kept[0] < PLACES_FRESH:
            return kept[1]
    places = {job_id: place for place, (_, job_id, _, _) in enumerate(_order(session), start=1)}
    with _places_lock:
        _places[engine] = (moment, places)
    return places


def position(session, submission: Submission) -> int:
    """1 for the next job to be graded, 0 once it is being graded (or done): its place in the
    order of :func:`_order`, as the queue was at most :data:`PLACES_FRESH` seconds ago (a job
    newer than that order is placed in a new one)."""
    if submission.status != QUEUED:
        return 0
    place = _places_now(session, fresh=False).get(submission.id)
    if place is None:
        place = _places_now(session, fresh=True).get(submission.id)
    return place or 1


def graders_ready(session) -> list[Grader]:
    """Grading processes that are ready and were seen in the last 15 seconds."""
    recent = now() - timedelta(seconds=15)
    return list(
        session.scalars(
            select(Grader).where(
                Grader.ready.is_(True), Grader.stopped.is_(False), Grader.last_seen >= recent
            )
        )
    )


def regrade(db: Database, student_id: str | None = None, lab: str | None = None) -> int:
    """Queue finished submissions again (of a student, of a lab), after students' own submissions;
    each keeps its id and gets one new result. Returns how many."""
    if student_id is None and lab is None:
        raise ValueError("re-grade a student or a lab")
    with db.writing() as session:
        query = update(Submission).where(Submission.status.in_((GRADED, ERROR)))
        if student_id is not None:
            query = query.where(Submission.student_id == student_id)
        if lab is not None:
            query = query.where(Submission.lab == lab)
        return rowcount(session.execute(
            query.values(
                status=QUEUED,
                priority=1,
                claims=0,
                claimed_by=None,
                claimed_at=None,
                result=None,
                score=None,
                error=None,
                finished_at=None,
                seconds=None,
                regrades=Submission.regrades + 1,
            )
        ))


def stats(session) -> dict:
    """The queue's length, and how old its oldest job is."""
    counts = dict(
        session.execute(select(Submission.status, func.count()).group_by(Submission.status)).all()
    )
    oldest = session.scalar(
        select(func.min(Submission.created_at)).where(Submission.status == QUEUED)
    )
    return {
        "queued": counts.get(QUEUED, 0),
        "grading": counts.get(GRADING, 0),
        "graded": counts.get(GRADED, 0),
        "error": counts.get(ERROR, 0),
        "oldest": (now() - oldest).total_seconds() if oldest else None,
    }

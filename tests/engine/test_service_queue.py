"""The service's durable queue (autograder/service/queue.py) on a real SQLite database, with no
course and no server: a claim is won once, a lost job goes back once and then gets its row, a job
given back is not counted, one student's lab is never graded twice at once."""
from __future__ import annotations

import hashlib

import pytest

from autograder.grading.result import GRADED as GRADED_STATUS, WORKER_LOST, GradeResult
from autograder.service import queue
from autograder.service.database import Database
from autograder.service.models import ERROR, GRADED, GRADING, QUEUED, Student, Submission
from autograder.service.settings import now


@pytest.fixture
def db(tmp_path):
    database = Database(str(tmp_path / "queue.db"))
    database.migrate()
    with database.writing() as session:
        session.add_all([Student(student_id=student, name=student, on_roster=True, added_at=now())
                         for student in ("amy", "ben", "cy")])
    queue.register(database, "one", "local", 2)
    queue.register(database, "two", "local", 2)
    yield database
    database.close()


def submit(db: Database, student: str, lab: str = "toy", priority: int = 0) -> int:
    body = f"{student}/{lab}".encode()
    with db.writing() as session:
        row = Submission(student_id=student, lab=lab, file_name=f"{student}.ipynb",
                         sha256=hashlib.sha256(body).hexdigest(), size=len(body), notebook=body,
                         created_at=now(), status=QUEUED, priority=priority)
        session.add(row)
        session.flush()
        return row.id


def status(db: Database, job_id: int) -> tuple[str, int]:
    with db.reading() as session:
        row = session.get(Submission, job_id)
        assert row is not None
        return row.status, row.claims


def test_a_claim_is_won_once_and_its_result_kept_by_its_claimer_only(db):
    first = submit(db, "amy")
    job = queue.claim(db, "one")
    assert job is not None and (job.id, job.student_id, job.notebook, job.claims) == (
        first, "amy", b"amy/toy", 1)
    assert queue.claim(db, "two") is None, "nothing else is queued"
    row = GradeResult("amy", "amy.ipynb", status=GRADED_STATUS, lab="toy", score=3, max_score=5)
    assert not queue.finish(db, "two", job.id, row), "not two's claim"
    assert queue.finish(db, "one", job.id, row)
    assert status(db, first) == (GRADED, 1)


def test_students_come_before_regrades_then_oldest_first(db):
    # the regrade is a third student's: a student holds one slot at most (queue.py's fair order)
    regrade = submit(db, "cy", "a", priority=1)
    older, newer = submit(db, "amy", "b"), submit(db, "ben", "b")
    assert [queue.claim(db, "one").id for _ in range(3)] == [older, newer, regrade]


def test_one_student_lab_is_never_graded_twice_at_once(db):
    first, second = submit(db, "amy"), submit(db, "amy")
    assert queue.claim(db, "one").id == first
    assert queue.claim(db, "two") is None, "amy's toy lab is being graded"
    assert status(db, second) == (QUEUED, 0)


def test_a_lost_job_goes_back_once_then_gets_a_worker_lost_row(db):
    job_id = submit(db, "ben")
    job = queue.claim(db, "one")
    assert queue.lost(db, "one", job, "killed") == QUEUED
    assert status(db, job_id) == (QUEUED, 1)
    again = queue.claim(db, "two")
    assert again.claims == 2
    assert queue.lost(db, "two", again, "killed again") == ERROR
    with db.reading() as session:
        row = session.get(Submission, job_id)
        assert row.status == ERROR and WORKER_LOST in (row.result or "")


def test_a_job_given_back_is_not_counted(db):
    job_id = submit(db, "amy")
    job = queue.claim(db, "one")
    assert status(db, job_id) == (GRADING, 1)
    queue.give_back(db, "one", job.id)
    assert status(db, job_id) == (QUEUED, 0)

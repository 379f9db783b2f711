"""The service's tables (SQLAlchemy 2 declarative models). Their schema is made and changed by the
alembic migrations in ``migrations/`` only; ``tests/service/test_service_database.py`` checks that
the migrations build exactly these tables, on SQLite and PostgreSQL.

Times are naive UTC. Secrets are never stored: a token or a session cookie is kept as the SHA-256
of its value, a password as its scrypt hash.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, deferred, mapped_column

from autograder.strenum import StrEnum


class SubmissionStatus(StrEnum):
    """Where a submission is (``Submission.status``, the API's ``status``, the Submit cell's
    words); the table holds the value, read back as a plain ``str`` equal to the member."""

    QUEUED = "queued"
    GRADING = "grading"
    GRADED = "graded"
    ERROR = "error"  # finished without a grade: the row's GradeResult says why


# the members by the names the service imports
QUEUED, GRADING, GRADED, ERROR = (
    SubmissionStatus.QUEUED, SubmissionStatus.GRADING, SubmissionStatus.GRADED,
    SubmissionStatus.ERROR)
PENDING = (QUEUED, GRADING)
# Account.role
INSTRUCTOR, TA = "instructor", "ta"
ROLES = (INSTRUCTOR, TA)


class Base(DeclarativeBase):
    pass


class Student(Base):
    """A roster row: who may submit."""

    __tablename__ = "students"
    student_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    name: Mapped[str] = mapped_column(String(300), default="")
    email: Mapped[str] = mapped_column(String(300), default="")
    # dropped from the roster: may no longer submit
    on_roster: Mapped[bool] = mapped_column(Boolean, default=True)
    added_at: Mapped[datetime] = mapped_column(DateTime)


class Token(Base):
    """A student's personal token: ``<selector>.<secret>``; the selector finds the row, the SHA-256
    of the whole token is compared in constant time."""

    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    student_id: Mapped[str] = mapped_column(ForeignKey("students.student_id"), index=True)
    selector: Mapped[str] = mapped_column(String(32), unique=True)
    digest: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class Account(Base):
    """An instructor's or a TA's account for the dashboard."""

    __tablename__ = "accounts"
    username: Mapped[str] = mapped_column(String(100), primary_key=True)
    role: Mapped[str] = mapped_column(String(20))
    password: Mapped[str] = mapped_column(String(300))  # scrypt$n$r$p$salt$hash
    created_at: Mapped[datetime] = mapped_column(DateTime)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)


class WebSession(Base):
    """A signed-in browser: a student (by token, or by an LTI launch) or an account."""

    __tablename__ = "web_sessions"
    # SHA-256 of the cookie's value
    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    student_id: Mapped[str | None] = mapped_column(ForeignKey("students.student_id"), nullable=True)
    username: Mapped[str | None] = mapped_column(ForeignKey("accounts.username"), nullable=True)
    via: Mapped[str] = mapped_column(String(20))  # token | password | lti
    csrf: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime)
    expires_at: Mapped[datetime] = mapped_column(DateTime, index=True)


class Submission(Base):
    """One handed-in notebook, its place in the queue and its one result."""

    __tablename__ = "submissions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    student_id: Mapped[str] = mapped_column(ForeignKey("students.student_id"))
    lab: Mapped[str] = mapped_column(String(100))
    file_name: Mapped[str] = mapped_column(String(300))
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    notebook: Mapped[bytes] = deferred(mapped_column(LargeBinary))
    created_at: Mapped[datetime] = mapped_column(DateTime)
    late: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(20))  # queued | grading | graded | error
    # 0: a student's; 1: a re-grade (after them)
    priority: Mapped[int] = mapped_column(Integer, default=0)
    # "<student>/<lab>" while a student's own submission waits or is graded, else NULL: the unique
    # constraint lets one student have one submission of a lab in the queue at a time.
    pending_key: Mapped[str | None] = mapped_column(String(320), nullable=True, unique=True)
    # "<student>/<lab>" while it is graded: never two of one
    # student's lab at once (re-grades included).
    grading_key: Mapped[str | None] = mapped_column(String(320), nullable=True, unique=True)
    # grading processes that took it (2 at most)
    claims: Mapped[int] = mapped_column(Integer, default=0)
    # claims cut short by the service itself (its grading process or the whole server ended, the
    # database went away): given back uncounted, up to queue.INTERRUPTIONS_ALLOWED
    interruptions: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    claimed_by: Mapped[str | None] = mapped_column(ForeignKey("graders.id"), nullable=True)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    worker_pid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    # grading time of the notebook
    seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    # GradeResult.to_json(), as JSON
    result: Mapped[str | None] = deferred(mapped_column(Text, nullable=True))
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    max_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    regrades: Mapped[int] = mapped_column(Integer, default=0)

    __table_args__ = (
        Index("ix_submissions_queue", "status", "priority", "id"),
        Index("ix_submissions_student_lab", "student_id", "lab", "created_at"),
    )


class Grader(Base):
    """A grading process: where it runs, and when it was last seen (its heartbeat)."""

    __tablename__ = "graders"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    # the process's start time (a reused pid is another process)
    process_started: Mapped[float] = mapped_column(Float)
    kind: Mapped[str] = mapped_column(String(20))  # local | dask
    workers: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(DateTime)
    last_seen: Mapped[datetime] = mapped_column(DateTime)
    ready: Mapped[bool] = mapped_column(Boolean, default=False)
    stopped: Mapped[bool] = mapped_column(Boolean, default=False)


class LtiState(Base):
    """What an LTI 1.3 sign-in keeps between its steps (pylti1p3's launch data storage): nonces
    (each good once, for minutes), launches (for the deep-linking choice and the instructor's page),
    and one-time codes. JSON values; a row past ``expires_at`` is gone."""

    __tablename__ = "lti_state"
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column(DateTime, index=True)


class LtiLink(Base):
    """A student's lab as an LMS gradebook column: where the counted attempt's score is posted
    (AGS). ``wanted`` counts the results recorded since the link was made, ``posted`` the last of
    them sent: a score is due while ``wanted > posted``."""

    __tablename__ = "lti_links"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    # SHA-256 of student, lab, issuer, client, line item
    key: Mapped[str] = mapped_column(String(64), unique=True)
    student_id: Mapped[str] = mapped_column(ForeignKey("students.student_id"))
    lab: Mapped[str] = mapped_column(String(100))
    issuer: Mapped[str] = mapped_column(Text)
    client_id: Mapped[str] = mapped_column(Text)
    deployment_id: Mapped[str] = mapped_column(Text)
    # the launch's "sub": who the LMS says the student is
    lti_user_id: Mapped[str] = mapped_column(Text)
    # the launch's AGS claim (scope, lineitems, lineitem), JSON
    ags: Mapped[str] = mapped_column(Text)
    # the service's address as the student reached it (feedback links)
    tool_url: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime)
    launched_at: Mapped[datetime] = mapped_column(DateTime)
    wanted: Mapped[int] = mapped_column(Integer, default=1)
    posted: Mapped[int] = mapped_column(Integer, default=0)
    # also a poster's lease
    next_try_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    tries: Mapped[int] = mapped_column(Integer, default=0)  # failed posts in a row
    posted_submission_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    posted_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    posted_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)  # why the last post failed

    __table_args__ = (Index("ix_lti_links_student_lab", "student_id", "lab"),
                      Index("ix_lti_links_due", "wanted", "posted"))

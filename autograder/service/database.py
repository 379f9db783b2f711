"""The database: an engine from a URL, sessions for reading and for writing, and the migrations.

``--db`` takes a file path (an SQLite file, the default), ``sqlite:///PATH``, or a PostgreSQL URL
(``postgresql://user:password@host/name``, driven by psycopg 3).

SQLite is shared by the web process and the grading process: it runs in WAL mode (readers never
wait), and a transaction that writes takes the write lock when it begins (``BEGIN IMMEDIATE``), so
that it waits for another writer (``busy_timeout``) instead of failing when it comes to write.

    >>> database_url("out/service.db").startswith("sqlite:////")
    True
    >>> database_url("postgresql://grader@db.example.edu/course")
    'postgresql+psycopg://grader@db.example.edu/course'
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, cast

from sqlalchemy import create_engine, event
from sqlalchemy.engine import CursorResult, Engine, Result, make_url
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from autograder.service.private import narrow, private_folder

MIGRATIONS = Path(__file__).parent / "migrations"


def rowcount(result: Result) -> int:
    """How many rows an UPDATE or DELETE matched: ``Session.execute`` is typed as giving a
    ``Result``, but for those statements it gives a ``CursorResult``, which has ``rowcount``."""
    return cast(CursorResult, result).rowcount


def database_url(text: str) -> str:
    """The SQLAlchemy URL for what ``--db`` says."""
    if "://" not in text:
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    for plain in ("postgresql://", "postgres://"):
        if text.startswith(plain):
            return "postgresql+psycopg://" + text[len(plain):]
    return text


PASSWORD_ON_COMMAND_LINE = (
    "the database password is on the command line, where every user of this machine can read it "
    "(ps, /proc/PID/cmdline): leave it out of --db and put it in a file only you can read, named "
    "by --db-password-file, or in ~/.pgpass (or the file $PGPASSFILE names), which PostgreSQL's "
    "own client reads (docs/SERVICE.md)"
)


def url_with_password(text: str, password_file: Path | None = None) -> str:
    """The database URL from ``--db`` and ``--db-password-file``. A password written in ``--db``
    itself is refused (ValueError): the command line is public on this machine. Without a password
    file, PostgreSQL's client finds the password itself (``~/.pgpass``, ``$PGPASSFILE``).

    >>> url_with_password("postgresql://grader@db/course")
    'postgresql://grader@db/course'
    >>> url_with_password("postgresql://grader:secret@db/course")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: the database password is on the command line, ...
    """
    url = database_url(text)
    if url.startswith("sqlite"):
        if password_file is not None:
            raise ValueError("--db-password-file is for a PostgreSQL database, not an SQLite file")
        return text
    parsed = make_url(url)
    if parsed.password is not None:
        raise ValueError(PASSWORD_ON_COMMAND_LINE)
    if password_file is None:
        return text
    try:
        password = Path(password_file).read_text(encoding="utf-8").split("\n")[0].rstrip("\r")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"the database password file {password_file} could not be read "
                         f"({getattr(error, 'strerror', None) or error})") from None
    if not password:
        raise ValueError(f"the database password file {password_file} is empty: its first line is "
                         "the password")
    return parsed.set(password=password).render_as_string(hide_password=False)


def shown_url(url: str) -> str:
    """The URL with its password hidden (for messages and logs)."""
    return make_url(database_url(url)).render_as_string(hide_password=True)


def make_engine(url: str, pooled: bool = True) -> Engine:
    """``pooled=False``: no connection stays open between transactions (a process that forks workers
    must not hand them open connections)."""
    url = database_url(url)
    pool = {} if pooled else {"poolclass": NullPool}
    if not url.startswith("sqlite"):
        return create_engine(
            url, pool_pre_ping=True, **({"pool_size": 10, "max_overflow": 20} if pooled else pool)
        )
    path = make_url(url).database
    if path and path != ":memory:":
        private_folder(Path(path).parent)
        narrow(Path(path))
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, **pool)

    @event.listens_for(engine, "connect")
    def _connect(connection, _record):
        connection.isolation_level = None  # transactions are begun below, not by the sqlite3 module
        cursor = connection.cursor()
        for pragma in (
            "journal_mode=WAL",
            "busy_timeout=30000",
            "foreign_keys=ON",
            "synchronous=NORMAL",
        ):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection):
        connection.exec_driver_sql(
            "BEGIN IMMEDIATE" if connection.get_execution_options().get("writes") else "BEGIN"
        )

    return engine


class Database:
    """One engine; ``reading()`` and ``writing()`` give a session in a transaction (committed at the
    end of a ``writing()`` block, rolled back on an exception)."""

    def __init__(self, url: str, pooled: bool = True):
        self.url = database_url(url)
        self.engine = make_engine(self.url, pooled)
        self._writer = self.engine.execution_options(writes=True)

    @contextmanager
    def reading(self) -> Iterator[Session]:
        with Session(self.engine, expire_on_commit=False) as session:
            yield session

    @contextmanager
    def writing(self) -> Iterator[Session]:
        with Session(self._writer, expire_on_commit=False) as session, session.begin():
            yield session

    def migrate(self) -> None:
        """Bring the schema to the newest migration (creates the tables of a new database)."""
        migrate(self.engine)

    def close(self) -> None:
        self.engine.dispose()


def alembic_config(engine: Engine | None = None):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


def migrate(engine: Engine) -> None:
    from alembic import command

    command.upgrade(alembic_config(engine), "head")

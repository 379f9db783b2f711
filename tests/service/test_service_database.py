"""The database: the migrations build exactly the models' tables, and the queue's claim gives each
job to one claimer only, on SQLite and on a real PostgreSQL server that the test starts (Debian's
``postgresql``, with a password: ``postgres`` in conftest.py; skipped, with the reason, where it is
not installed). Then the whole service on PostgreSQL: tokens, a submission, its result, the
password read from a file by each command."""
from __future__ import annotations

import threading

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from autograder.service import queue
from autograder.service.database import Database
from autograder.service.models import Base, Student, Submission
from autograder.service.settings import now
from postgres_server import PASSWORD
from service_helpers import Server, command, free_port, one_result


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    url = (
        str(tmp_path / "queue.db")
        if request.param == "sqlite"
        else request.getfixturevalue("postgres").url_with_password  # this process's own
    )
    db = Database(url)
    db.migrate()
    yield db
    if request.param == "postgresql":
        Base.metadata.drop_all(db.engine)
        with db.engine.begin() as connection:
            connection.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
    db.close()


def test_the_migrations_build_exactly_the_models_tables(database):
    with database.engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
    database.migrate()  # again: nothing to do


def test_each_job_is_claimed_once_however_many_claim_at_once(database):
    with database.writing() as session:
        session.add_all(Student(student_id=f"u{n}", added_at=now()) for n in range(30))
        session.flush()
        session.add_all(Submission(student_id=f"u{n}", lab="toy_bpe", file_name="x.ipynb",
                                   sha256="0" * 64, size=1,
                                   notebook=b"{}", created_at=now(), status="queued", claims=0,
                                   regrades=0, priority=0)
                        for n in range(30))
    graders = [f"grader{n}" for n in range(4)]
    for grader in graders:
        queue.register(database, grader, "local", 1)
    claimed = {grader: [] for grader in graders}

    def claim_all(grader):
        while (job := queue.claim(database, grader)) is not None:
            claimed[grader].append(job.id)

    threads = [threading.Thread(target=claim_all, args=(grader,)) for grader in graders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    everything = [job for jobs in claimed.values() for job in jobs]
    assert sorted(everything) == sorted(set(everything)) and len(everything) == 30


def test_the_service_on_postgresql(postgres, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,name\np001,Pat\n", encoding="utf-8")
    secret = ["--db-password-file", str(postgres.password_file(tmp_path))]
    made = command("tokens", "--roster", str(roster), "--db", postgres.url, *secret, "--out",
                   str(tmp_path / "tokens.csv"))
    assert made.returncode == 0, made.stderr
    token = (tmp_path / "tokens.csv").read_text(encoding="utf-8").splitlines()[1].split(",")[1]
    port = free_port()
    server = Server(f"http://127.0.0.1:{port}", tmp_path / "none", tmp_path / "server.log",
                    tmp_path, {"p001": token})
    server.args = ["--db", postgres.url, *secret, "--port", str(port), "--workers", "1"]
    result = one_result(server, "p001")
    assert result["status"] == "graded" and result["score"] == 9
    log = server.log.read_text(encoding="utf-8")
    assert "postgresql+psycopg://grader:***@127.0.0.1" in log and PASSWORD not in log

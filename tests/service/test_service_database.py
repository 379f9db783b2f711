"""The database: the migrations build exactly the models' tables, and the queue's claim gives each
job to one claimer only, on SQLite and on a real PostgreSQL server that the test starts (Debian's
``postgresql``; skipped, with the reason, where it is not installed). Then the whole service on
PostgreSQL: tokens, a submission, its result."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from autograder.service import queue
from autograder.service.database import Database
from autograder.service.models import Base, Student, Submission
from autograder.service.settings import now
from service_helpers import Server, command, free_port, one_result

INITDB = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))


def _as_postgres():
    """Run as the postgres user when root (the server refuses to run as root)."""
    if os.geteuid() != 0:
        return None
    user = pwd.getpwnam("postgres")

    def demote():
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)
    return demote


@pytest.fixture(scope="module")
def postgres():
    if not INITDB:
        pytest.skip("PostgreSQL is not installed (Debian: apt-get install postgresql; .ci/run "
                    "installs it)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no postgres user to run the PostgreSQL "
                        "server as")
    binaries = Path(INITDB[-1]).parent
    folder = Path(tempfile.mkdtemp(prefix="autograder-postgres-"))
    folder.chmod(0o755)
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
    port = free_port()

    def run(*args):
        return subprocess.run([str(binaries / args[0]), *args[1:]], capture_output=True, text=True,
                              timeout=120, preexec_fn=_as_postgres(), cwd=folder)

    made = run("initdb", "-D", str(folder / "data"), "-A", "trust", "-U", "grader", "--no-sync",
               "-E", "UTF8")
    assert made.returncode == 0, made.stderr
    started = run("pg_ctl", "-D", str(folder / "data"), "-l", str(folder / "log"), "-w", "-t", "60",
                  "start",
                  "-o", f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off")
    assert started.returncode == 0, started.stderr + (folder / "log").read_text()
    try:
        created = run("createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "grader", "course")
        assert created.returncode == 0, created.stderr
        yield f"postgresql://grader@127.0.0.1:{port}/course"
    finally:
        run("pg_ctl", "-D", str(folder / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    url = (
        str(tmp_path / "queue.db")
        if request.param == "sqlite"
        else request.getfixturevalue("postgres")
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
    made = command("tokens", "--roster", str(roster), "--db", postgres, "--out",
                   str(tmp_path / "tokens.csv"))
    assert made.returncode == 0, made.stderr
    token = (tmp_path / "tokens.csv").read_text(encoding="utf-8").splitlines()[1].split(",")[1]
    port = free_port()
    server = Server(f"http://127.0.0.1:{port}", tmp_path / "none", tmp_path / "server.log",
                    tmp_path, {"p001": token})
    server.args = ["--db", postgres, "--port", str(port), "--workers", "1"]
    result = one_result(server, "p001")
    assert result["status"] == "graded" and result["score"] == 9
    assert "postgresql+psycopg://grader@127.0.0.1" in server.log.read_text(encoding="utf-8")

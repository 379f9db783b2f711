"""A real PostgreSQL server of the test's own (Debian's ``postgresql``), with a password
(SCRAM, as a shared server would ask), that a test can stop and start again: the one start-up code
of every PostgreSQL test (``postgres`` in conftest.py: one server per test module). A command gets
the password from a file (:meth:`Postgres.password_file`), never on its command line."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from service_helpers import free_port

INITDB = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
PASSWORD = "s3cret-Pg-passw0rd-for-tests"


def _as_postgres():
    """Run as the postgres user when root (the server refuses to run as root)."""
    if os.geteuid() != 0:
        return None
    user = pwd.getpwnam("postgres")

    def demote():
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)
    return demote


class Postgres:
    """``url``: postgresql://grader@127.0.0.1:PORT/course, without the password (``PASSWORD``)."""

    def __init__(self):
        if not INITDB:
            pytest.skip("PostgreSQL is not installed (Debian: apt-get install postgresql)")
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                pytest.skip("running as root and there is no postgres user to run PostgreSQL as")
        self.binaries = Path(INITDB[-1]).parent
        self.folder = Path(tempfile.mkdtemp(prefix="autograder-postgres-"))
        self.folder.chmod(0o755)
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
        self.port = free_port()
        self.url = f"postgresql://grader@127.0.0.1:{self.port}/course"
        secret = self.folder / "pw"
        secret.write_text(PASSWORD + "\n", encoding="utf-8")
        if os.geteuid() == 0:
            os.chown(secret, pwd.getpwnam("postgres").pw_uid, -1)
        made = self.run(
            "initdb",
            "-D",
            str(self.folder / "data"),
            "-A",
            "scram-sha-256",
            "-U",
            "grader",
            f"--pwfile={secret}",
            "--no-sync",
            "-E",
            "UTF8",
        )
        assert made.returncode == 0, made.stderr
        secret.unlink()
        self.start()
        created = self.run(
            "createdb",
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            "grader",
            "course",
            env={**os.environ, "PGPASSWORD": PASSWORD},
        )
        assert created.returncode == 0, created.stderr

    @property
    def url_with_password(self) -> str:
        """The URL with the password: for this test process's own connections only (never on a
        command line: every user of the machine can read those)."""
        return self.url.replace("grader@", f"grader:{PASSWORD}@")

    def password_file(self, folder: Path) -> Path:
        """An owner-only file in ``folder`` whose first line is the password (what
        ``--db-password-file`` reads)."""
        path = folder / "db-password"
        path.write_text(PASSWORD + "\n", encoding="utf-8")
        path.chmod(0o600)
        return path

    def query(self, sql: str, *params) -> list[tuple]:
        """The rows ``sql`` selects, read straight from the database."""
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, dbname="course", user="grader",
                             password=PASSWORD, connect_timeout=30) as connection:
            return connection.execute(sql, params).fetchall()

    def run(self, program: str, *args: str, env=None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.binaries / program), *args],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=_as_postgres(),
            cwd=self.folder,
            env=env,
        )

    def start(self) -> None:
        started = self.run(
            "pg_ctl",
            "-D",
            str(self.folder / "data"),
            "-l",
            str(self.folder / "log"),
            "-w",
            "-t",
            "60",
            "start",
            "-o",
            f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off",
        )
        assert started.returncode == 0, started.stderr + (self.folder / "log").read_text()

    def stop(self, mode: str = "fast") -> None:
        stopped = self.run("pg_ctl", "-D", str(self.folder / "data"), "-m", mode, "-w", "stop")
        assert stopped.returncode == 0, stopped.stderr

    def remove(self) -> None:
        self.run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)

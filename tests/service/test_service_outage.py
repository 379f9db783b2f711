"""The web process, the grading process and the database fail apart (issue 35, finding
10), on a real PostgreSQL server with a password that the test stops and starts again:
the password never on a command line; a database outage answers documented JSON 503s,
/health says what is down, and the job being graded meanwhile is neither lost nor
charged; a server killed twice while it grades a notebook charges it nothing."""
from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time

import nbformat

from postgres_server import PASSWORD
from service_helpers import EXAMPLES, Server, command, free_port, make_service, upload, wait_result


def _pg_service(
    postgres, tmp_path, student: str, *extra: str, password_file: bool = True
) -> Server:
    """A server on the shared PostgreSQL database, with a new ``student`` and their token; the
    password from --db-password-file, or else from $PGPASSFILE (which the caller sets)."""
    secret = ["--db-password-file", str(postgres.password_file(tmp_path))] if password_file else []
    roster = tmp_path / "roster.csv"
    roster.write_text(f"student_id,name\n{student},Pat\n", encoding="utf-8")
    made = command("tokens", "--roster", str(roster), "--db", postgres.url, *secret,
                   "--out", str(tmp_path / "tokens.csv"))
    assert made.returncode == 0, made.stderr
    tokens = {
        row["student_id"]: row["token"]
        for row in csv.DictReader(open(tmp_path / "tokens.csv", encoding="utf-8"))
    }
    port = free_port()
    server = Server(
        f"http://127.0.0.1:{port}", tmp_path / "none", tmp_path / "server.log", tmp_path, tokens
    )
    server.args = ["--db", postgres.url, *secret, "--port", str(port), *extra]
    return server


def test_the_database_password_never_goes_on_the_command_line(postgres, tmp_path):
    with_password = postgres.url.replace("grader@", f"grader:{PASSWORD}@")
    refused = command("serve", "--db", with_password, "--port", str(free_port()), timeout=60)
    assert refused.returncode == 2 and "password is on the command line" in refused.stderr, (
        refused.stderr
    )
    assert "Traceback" not in refused.stderr
    # libpq's own password file, as docs/SERVICE.md shows
    pgpass = _pgpass(postgres, tmp_path)
    listed = subprocess.run(
        [sys.executable, "-m", "autograder", "accounts", "list", "--db", postgres.url],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PGPASSFILE": str(pgpass)},
    )
    assert listed.returncode == 0, listed.stderr
    # --db-password-file: the service runs, and no process of it shows the password
    server = _pg_service(postgres, tmp_path, "p001", "--workers", "1")
    server.start()
    try:
        family = server.family()
        assert len(family) >= 2
        for process in family:
            assert PASSWORD not in " ".join(process.cmdline())
        with server.client("p001") as client:
            queued = upload(client, EXAMPLES / "toy-merge-overlaps.ipynb")
            assert queued.status_code == 202, queued.text
            assert wait_result(client, queued.json()["id"])["score"] == 9
    finally:
        server.stop()
    assert PASSWORD not in server.log.read_text(encoding="utf-8")


def _pgpass(postgres, tmp_path):
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{postgres.port}:course:grader:{PASSWORD}\n", encoding="utf-8")
    pgpass.chmod(0o600)
    return pgpass


def test_a_database_outage_answers_503_json_and_charges_no_job(postgres, tmp_path, monkeypatch):
    slow = nbformat.read(EXAMPLES / "toy-correct.ipynb", as_version=4)
    slow.cells.insert(1, nbformat.v4.new_code_cell("import time\ntime.sleep(15)"))
    monkeypatch.setenv("PGPASSFILE", str(_pgpass(postgres, tmp_path)))  # libpq's own way
    server = _pg_service(
        postgres, tmp_path, "p002", "--workers", "1", "--rate", "0", password_file=False
    )
    server.start()
    try:
        with server.client("p002") as client:
            job = upload(client, content=nbformat.writes(slow).encode(), name="slow.ipynb").json()[
                "id"
            ]
            deadline = time.monotonic() + 120
            while client.get(f"/api/v1/submissions/{job}").json()["status"] != "grading":
                assert time.monotonic() < deadline
                time.sleep(0.1)
            for _ in range(2):  # two short outages while it is graded (each used to count a claim)
                postgres.stop()
                try:
                    health = client.get("/health")
                    assert (
                        health.status_code == 503 and health.json()["database"] == "unreachable"
                    ), health.text
                    for answer in (client.get(f"/api/v1/submissions/{job}"),
                                   upload(client, EXAMPLES / "gpt2-correct.ipynb")):
                        assert answer.status_code == 503, answer.text
                        assert answer.headers["content-type"] == "application/json"
                        assert answer.json()["status"] == "database_unavailable"
                    time.sleep(2)
                finally:
                    postgres.start()
            result = wait_result(client, job)
            deadline = time.monotonic() + 60
            while client.get("/health").status_code != 200:
                assert time.monotonic() < deadline, client.get("/health").text
                time.sleep(0.5)
    finally:
        server.stop()
    assert result["status"] == "graded" and result["score"] == 11, result
    assert "Traceback" not in server.log.read_text(encoding="utf-8")


def _claimer(server, job: int) -> str | None:
    """The grading process grading ``job`` with a worker, if one is."""
    import sqlite3

    with sqlite3.connect(server.db) as connection:
        found = connection.execute(
            "SELECT claimed_by FROM submissions WHERE id = ? AND status = 'grading' "
            "AND worker_pid IS NOT NULL",
            (job,),
        ).fetchone()
    return found[0] if found else None


def test_a_server_killed_twice_while_it_grades_charges_the_notebook_nothing(tmp_path):
    slow = nbformat.read(EXAMPLES / "toy-correct.ipynb", as_version=4)
    slow.cells.insert(1, nbformat.v4.new_code_cell("import time\ntime.sleep(6)"))
    server = make_service(tmp_path / "killed", "--workers", "1", "--rate", "0")
    server.start()
    try:
        with server.client("s001") as client:
            job = upload(client, content=nbformat.writes(slow).encode(), name="slow.ipynb").json()[
                "id"
            ]
        claimers = []
        for _ in range(2):
            deadline = time.monotonic() + 120
            while True:  # graded by a grading process of this start (not the row a killed one left)
                claimer = _claimer(server, job)
                if claimer is not None and claimer not in claimers:
                    break
                assert time.monotonic() < deadline
                time.sleep(0.05)
            claimers.append(claimer)
            time.sleep(1)  # its kernel is at work
            server.process.send_signal(signal.SIGKILL)
            server.process.wait(30)
            server.stop()
            server.start()
        with server.client("s001") as client:
            result = wait_result(client, job)
    finally:
        server.stop()
    # was: error, "stopped ... twice"
    assert result["status"] == "graded" and result["score"] == 11, result


def test_after_a_restart_the_service_adopts_its_dask_tasks_and_grades_no_job_twice(tmp_path):
    """A real TLS Dask cluster on loopback (one worker, one thread) outlives the service: killed
    while the cluster grades a job, the service comes back, adopts the task still running (its
    result is kept, its slot counted busy) and grades the job once; a classmate's job waits for the
    slot instead of queueing behind a task the service believed gone (it was graded twice)."""
    import sqlite3

    from autograder.batch.dask_tls import LocalTLSCluster

    slow = nbformat.read(EXAMPLES / "toy-correct.ipynb", as_version=4)
    slow.cells.insert(1, nbformat.v4.new_code_cell("import time\ntime.sleep(15)"))
    with LocalTLSCluster(1) as cluster:
        server = make_service(tmp_path / "dask", "--scheduler", cluster.address, "--tls-dir",
                              str(cluster.certs.folder), "--rate", "0")
        server.start()
        try:
            with server.client("s001") as client:
                job = upload(
                    client, content=nbformat.writes(slow).encode(), name="slow.ipynb"
                ).json()["id"]
                deadline = time.monotonic() + 120
                while client.get(f"/api/v1/submissions/{job}").json()["status"] != "grading":
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
            time.sleep(2)  # the task runs on the worker
            server.process.send_signal(signal.SIGKILL)
            server.process.wait(30)
            server.stop()
            server.start()
            with server.client("s002") as client:
                other = upload(client, EXAMPLES / "gpt2-correct.ipynb").json()["id"]
                assert wait_result(client, other)["score"] == 10
            with server.client("s001") as client:
                result = wait_result(client, job)
        finally:
            server.stop()
    with sqlite3.connect(server.db) as connection:
        claims, interruptions, finished = connection.execute(
            "SELECT claims, interruptions, finished_at FROM submissions WHERE id = ?", (job,)
        ).fetchone()
        (claimed_other,) = connection.execute(
            "SELECT claimed_at FROM submissions WHERE id = ?", (other,)
        ).fetchone()
    assert result["status"] == "graded" and result["score"] == 11, result
    # adopted: neither claimed again nor recovered as an orphan
    assert (claims, interruptions) == (1, 0)
    assert claimed_other >= finished  # the one slot was the adopted task's until it ended
    assert "is adopted" in server.log.read_text(encoding="utf-8")

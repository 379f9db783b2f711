"""What the service's tests share: a real server process on loopback (``python -m autograder
serve``), its SQLite database, a roster, tokens and accounts made with the real commands; HTTP
helpers."""
from __future__ import annotations

import csv
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from autograder.service.database import Database
from autograder.service.tokens import set_account
from bpe_labs import ROOT

EXAMPLES = ROOT / "examples" / "submissions"
STUDENTS = [f"s{number:03d}" for number in range(1, 16)]
XSS_NAME = '<img src=x onerror="document.title=\'pwned\'">Eve'
INSTRUCTOR_PASSWORD = "correct horse battery staple"
TA_PASSWORD = "teaching assistant 1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def command(
    *args: str, stdin: str | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], input=stdin,
                          capture_output=True, text=True, cwd=cwd, timeout=timeout)


@dataclass
class Server:
    url: str
    db: Path
    log: Path
    folder: Path
    tokens: dict[str, str]
    process: subprocess.Popen | None = None
    args: list[str] = field(default_factory=list)
    # what Python runs: the real command
    program: list[str] = field(default_factory=lambda: ["-m", "autograder"])

    def client(self, student: str | None = None, token: str | None = None) -> httpx.Client:
        token = token or (self.tokens[student] if student else None)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def start(self) -> None:
        log = open(self.log, "a", encoding="utf-8")
        self.process = subprocess.Popen([sys.executable, *self.program, "serve", *self.args],
                                        stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        wait_healthy(self)

    def family(self) -> list[psutil.Process]:
        """The server and every process under it."""
        try:
            me = psutil.Process(self.process.pid)
            return [me, *me.children(recursive=True)]
        except psutil.Error:
            return []

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is None:
            return
        family = self.family()
        try:
            self.process.send_signal(sig)
            self.process.wait(60)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(10)
        gone, alive = psutil.wait_procs(family, timeout=30)
        for process in alive:  # none should be left; the test that cares asserts it before this
            process.kill()
        self.process = None


def wait_healthy(server: Server, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.process is not None and server.process.poll() is not None:
            raise RuntimeError("the server ended (exit code "
                               f"{server.process.returncode}):\n{server.log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{server.url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server did not become healthy:\n{server.log.read_text()[-3000:]}")


def make_service(folder: Path, *extra: str, students: list[str] = STUDENTS) -> Server:
    """A database with a roster, tokens and accounts made
    by the real commands, and the server's arguments."""
    folder.mkdir(parents=True, exist_ok=True)
    roster = folder / "roster.csv"
    with open(roster, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student_id", "name", "email"])
        for student in students:
            writer.writerow([student, XSS_NAME if student == "s008" else f"Student {student}",
                             f"{student}@example.edu"])
    db = folder / "service.db"
    made = command("tokens", "--roster", str(roster), "--db", str(db), "--out",
                   str(folder / "tokens.csv"))
    assert made.returncode == 0, made.stderr
    tokens = {row["student_id"]: row["token"]
              for row in csv.DictReader(open(folder / "tokens.csv", encoding="utf-8"))}
    made = command("accounts", "add", "prof", "--role", "instructor", "--db", str(db),
                   "--password-stdin", stdin=INSTRUCTOR_PASSWORD + "\n")
    assert made.returncode == 0, made.stderr
    # the TA's account as the command makes it, without another command's start-up
    database = Database(str(db))
    with database.writing() as session:
        set_account(session, "ta", "ta", TA_PASSWORD)
    database.close()
    port = free_port()
    server = Server(f"http://127.0.0.1:{port}", db, folder / "server.log", folder, tokens)
    server.args = ["--db", str(db), "--roster", str(roster), "--port", str(port), *extra]
    return server


def wait_result(client: httpx.Client, submission_id: int, seconds: float = 180) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        answer = client.get(f"/api/v1/submissions/{submission_id}")
        assert answer.status_code == 200, answer.text
        if answer.json()["status"] in ("graded", "error"):
            return answer.json()
        time.sleep(0.3)
    raise AssertionError(f"submission {submission_id} has no result after {seconds} s")


def one_result(server: Server, student: str, example: str = "toy-merge-overlaps") -> dict:
    """Start ``server``, hand in one example notebook as ``student``, wait for its result, stop the
    server (whatever happened); the result as the API gives it."""
    server.start()
    try:
        with server.client(student) as client:
            queued = upload(client, EXAMPLES / f"{example}.ipynb")
            assert queued.status_code == 202, queued.text
            return wait_result(client, queued.json()["id"])
    finally:
        server.stop()


def upload(
    client: httpx.Client, path: Path | None = None, content: bytes | None = None,
    name: str | None = None,
) -> httpx.Response:
    data = content if content is not None else Path(path).read_bytes()
    return client.post("/api/v1/submissions",
                       files={"notebook": (name or (Path(path).name if path else "x.ipynb"), data)})


def rows(server: Server, student: str | None = None) -> list[tuple]:
    """The submissions table as it is (id, student, lab,
    status), read straight from the database."""
    import sqlite3

    with sqlite3.connect(server.db) as connection:
        query = "SELECT id, student_id, lab, status, claims, worker_pid FROM submissions"
        if student:
            return connection.execute(
                query + " WHERE student_id = ? ORDER BY id", (student,)
            ).fetchall()
        return connection.execute(query + " ORDER BY id").fetchall()


def described(processes: list[psutil.Process]) -> list[str]:
    """Each process as ``pid status: command line`` (what a failing test says was left running)."""
    lines = []
    for process in processes:
        try:
            lines.append(f"{process.pid} {process.status()}: {' '.join(process.cmdline())[:200]}")
        except psutil.Error as error:
            lines.append(f"{process.pid}: {type(error).__name__}")
    return lines


def all_gone(processes: list[psutil.Process], seconds: float = 20) -> list[psutil.Process]:
    """The processes still alive after ``seconds`` (zombies count as gone)."""
    deadline = time.monotonic() + seconds
    while True:
        alive = []
        for process in processes:
            try:
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    alive.append(process)
            except psutil.Error:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

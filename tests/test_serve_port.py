"""``make serve`` on a busy port (issue 33, 7): the port is checked before anything is printed,
PORT= and HOST= choose it, one line says what holds it, and the instructor's password is printed
only when the account is really made. Real make, real processes, a real listening socket."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

from bpe_labs import ROOT


def run(command: list[str], timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """``command`` in a session of its own, ended whole if it outlives ``timeout`` (a server that
    did start must not stay behind)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, **kwargs)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        out, err = process.communicate()
        err += f"\n(still running after {timeout} s: ended)"
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def busy_port() -> socket.socket:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    return holder


def test_make_serve_on_a_busy_port_says_in_one_line_what_holds_it_and_nothing_else(tmp_path):
    """Was: the whole banner, the one-time password, then
    ``address already in use`` (and no PORT=)."""
    holder = busy_port()
    port = holder.getsockname()[1]
    service_dir = tmp_path / "service-data"
    try:
        # -o: the checkout's environment is taken as set up (the test runs in it already)
        done = run(["make", "-s", "-o", ".venv/.installed", "serve", f"PORT={port}",
                    "HOST=127.0.0.1",
                    f"SERVICE_DIR={service_dir}", f"PY={sys.executable}"], timeout=90, cwd=ROOT)
    finally:
        holder.close()
    said = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()
            and not line.startswith("make")]
    assert done.returncode != 0, said
    assert len(said) == 1, said
    assert f"port {port} on 127.0.0.1 is already in use by process {os.getpid()}" in said[0], said
    assert "PORT=" in said[0]
    assert not service_dir.exists()  # nothing made, no password printed


def test_serve_itself_checks_the_port_before_its_banner(tmp_path):
    holder = busy_port()
    port = holder.getsockname()[1]
    try:
        done = run([sys.executable, "-m", "autograder", "serve", "--port", str(port), "--db",
                    str(tmp_path / "s.db")], timeout=90)
    finally:
        holder.close()
    assert done.returncode == 2 and done.stdout == "", done
    assert (
        done.stderr.count("\n") == 1
        and f"port {port}" in done.stderr
        and "in use by process" in done.stderr
    )


def test_the_instructor_password_is_printed_only_when_the_account_is_made(tmp_path):
    add = [sys.executable, "-m", "autograder", "accounts", "add", "instructor", "--role",
           "instructor", "--random-password", "--if-new", "--db", str(tmp_path / "s.db")]
    first, again = run(add), run(add)
    assert first.returncode == 0 and "password: " in first.stdout, first
    assert (
        again.returncode == 0 and "password" in again.stdout and "password: " not in again.stdout
    ), again
    assert "unchanged" in again.stdout

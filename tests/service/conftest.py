"""One grading service for the tests of this folder (``service_helpers.py``), started once per test
process (``--dist loadfile`` may give the files to two processes: two servers)."""
from __future__ import annotations

import time

import pytest

from service_helpers import make_service


@pytest.fixture(scope="module")
def postgres():
    """A real PostgreSQL server of this test module's own, with a password
    (``postgres_server.py``; skipped, with the reason, where PostgreSQL is not installed)."""
    from postgres_server import Postgres

    server = Postgres()
    yield server
    server.remove()


@pytest.fixture(scope="session")
def service(tmp_path_factory):
    """The shared server: 2 grading processes, 3 submissions per lab per hour, a 1 MB upload cap,
    and deadlines: gpt2_bpe past and refused, ny_constitution past and marked, toy_bpe next year."""
    folder = tmp_path_factory.mktemp("service")
    deadlines = folder / "deadlines.csv"
    deadlines.write_text("lab,deadline,late\ngpt2_bpe,2020-01-01T00:00:00Z,refuse\n"
                         "ny_constitution,2020-01-01T00:00:00+02:00,mark\n", encoding="utf-8")
    next_year = time.gmtime().tm_year + 1
    server = make_service(folder, "--workers", "2", "--rate", "3/hour", "--max-upload-mb", "1",
                          "--deadlines", str(deadlines), "--deadline",
                          f"toy_bpe={next_year}-01-01T00:00:00Z")
    server.start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def shared_server_still_up(request):
    """After each test of the shared server: if it ended, say so with its log's last lines (a
    later test would only see its port refused)."""
    yield
    if "service" in request.fixturenames:
        server = request.getfixturevalue("service")
        if server.process is not None and server.process.poll() is not None:
            pytest.fail("the shared server ended during this test (exit code "
                        f"{server.process.returncode}):\n"
                        f"{server.log.read_text(encoding='utf-8', errors='replace')[-4000:]}")

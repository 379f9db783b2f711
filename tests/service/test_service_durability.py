"""The durable queue under failure: the server killed with SIGKILL while jobs wait and one is being
graded, then started again; grading processes killed while they grade. Every job ends with exactly
one result; a job lost twice gets an error result; nothing is left running."""
from __future__ import annotations

import signal
import time

import nbformat
import psutil

from service_helpers import EXAMPLES, all_gone, described, make_service, rows, upload, wait_result

def interruptions(server) -> dict[int, int]:
    import sqlite3

    with sqlite3.connect(server.db) as connection:
        return dict(connection.execute("SELECT id, interruptions FROM submissions"))


ORDER = [
    ("s001", "toy-correct", 11),
    ("s002", "gpt2-correct", 10),
    ("s003", "toy-merge-overlaps", 9),
]


def _wait_for(predicate, seconds: float = 120, step: float = 0.05):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(step)
    raise AssertionError("waited in vain")


def test_the_server_killed_with_jobs_queued_loses_none_and_each_gets_one_result(tmp_path):
    server = make_service(tmp_path / "killed", "--workers", "1", "--rate", "0")
    server.start()
    try:
        ids = {}
        for student, example, _ in ORDER:
            with server.client(student) as client:
                answer = upload(client, EXAMPLES / f"{example}.ipynb")
                assert answer.status_code == 202, answer.text
                ids[student] = answer.json()["id"]
        _wait_for(lambda: any(status == "grading" for _, _, _, status, *_ in rows(server)))
        family = server.family()
        assert len(family) >= 3  # the server, its grading process, a worker (and its kernels)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(30)
        left = all_gone(family)
        assert left == [], f"processes outlived the killed server: {described(left)}"
        before = {number: status for number, _, _, status, *_ in rows(server)}
        assert "grading" in before.values() and "queued" in before.values()
        server.start()  # the same database
        results = {}
        for student, _, _ in ORDER:
            with server.client(student) as client:
                results[student] = wait_result(client, ids[student])
                assert [item["id"] for item in client.get("/api/v1/submissions").json()] == [
                    ids[student]
                ]
    finally:
        server.stop()
    for student, _, score in ORDER:
        assert results[student]["status"] == "graded", results[student]
        assert results[student]["score"] == score
    claims = {number: claims for number, _, _, _, claims, _ in rows(server)}
    interrupted = [number for number, status in before.items() if status == "grading"]
    # graded again after the restart, once: the server's death is not the notebook's, so not counted
    assert all(claims[number] == 1 for number in claims)
    assert interruptions(server) == {number: 1 if number in interrupted else 0 for number in claims}
    assert len(rows(server)) == len(ORDER)


def test_a_killed_grading_process_is_retried_once_then_the_job_gets_an_error(tmp_path):
    slow = nbformat.read(EXAMPLES / "toy-correct.ipynb", as_version=4)
    for cell in slow.cells:
        if cell.get("id") == "initialize_solution":
            cell.source = "import time\ntime.sleep(60)\n" + cell.source
    server = make_service(tmp_path / "workers", "--workers", "1", "--rate", "0")
    server.start()
    try:
        with server.client("s001") as client:
            once = upload(client, EXAMPLES / "toy-correct.ipynb").json()["id"]
        with server.client("s002") as client:
            twice = upload(
                client, content=nbformat.writes(slow).encode(), name="slow.ipynb"
            ).json()["id"]
        with server.client("s003") as client:
            after = upload(client, EXAMPLES / "toy-merge-overlaps.ipynb").json()["id"]

        def grading(number, claims):
            found = [
                row
                for row in rows(server)
                if row[0] == number and row[3] == "grading" and row[4] == claims and row[5]
            ]
            return found[0][5] if found else None

        psutil.Process(_wait_for(lambda: grading(once, 1))).kill()  # its first grading process
        for claims in (1, 2):
            psutil.Process(_wait_for(lambda claims=claims: grading(twice, claims))).kill()
        with server.client("s001") as client:
            retried = wait_result(client, once)
        with server.client("s002") as client:
            lost = wait_result(client, twice)
        with server.client("s003") as client:
            later = wait_result(client, after)
    finally:
        server.stop()
    assert retried["status"] == "graded" and retried["score"] == 11
    assert lost["status"] == "error" and "stopped its grading process twice" in lost["error"]
    assert lost["score"] is None and lost["parts"] == {}
    assert later["status"] == "graded" and later["score"] == 9  # the queue went on
    claims = {number: claims for number, _, _, _, claims, _ in rows(server)}
    assert claims == {once: 2, twice: 2, after: 1}

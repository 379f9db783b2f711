"""The service's outside deadline (autograder/batch/deadline.py,
service/grading_process.py's LocalRunner), through real HTTP: a submission whose grading
hangs in the grader's own process gets an ``out_of_time`` error once ``--notebook-timeout``
and the grace have passed, is never graded again, and the next submission is graded.

Nothing a kernel sends can hold today's grader (tests/test_grader_time.py), so the hang is a
grader bug put back, as there: the old ``codec.decode``, which builds the same-hash ``set``
attack's reply in one C call that never returns. It is put back in the server's processes only
(the web process, and the grading process that multiprocessing's spawn starts by importing the
server's main file again), never in a kernel."""
from __future__ import annotations

import sqlite3
import time

from service_helpers import EXAMPLES, make_service, rows, upload, wait_result
from test_grader_time import HANG, same_hash_notebook

NOTEBOOK_SECONDS = 12
# deadline.hard_seconds with the default limits: 10 s, or the interrupt's grace, a drain and 5 s
GRACE = 12
SLACK = 30  # a grading process's start, the kernel's, a loaded machine

SERVER_MAIN = '''import sys

import hang_decode  # noqa: F401  (beside this file; also run in the grading process, \
which spawn starts from it)

if __name__ == "__main__":
    from autograder.cli import exit_quickly, main

    sys.exit(exit_quickly(main()))
'''


def test_a_hung_grading_ends_out_of_time_is_not_retried_and_the_next_submission_is_graded(tmp_path):
    (tmp_path / "hang_decode.py").write_text(HANG, encoding="utf-8")
    (tmp_path / "serve_with_old_decode.py").write_text(SERVER_MAIN, encoding="utf-8")
    server = make_service(tmp_path / "service", "--workers", "1", "--notebook-timeout",
                          str(NOTEBOOK_SECONDS), students=["s001", "s002"])
    server.program = [str(tmp_path / "serve_with_old_decode.py")]
    server.start()
    try:
        eve, ann = server.client("s001"), server.client("s002")
        started = time.monotonic()
        hung = upload(eve, content=same_hash_notebook(), name="toy_bpe.ipynb")
        assert hung.status_code == 202, hung.text
        # queued behind it: one grading process
        honest = upload(ann, EXAMPLES / "toy-correct.ipynb")
        assert honest.status_code == 202, honest.text

        answer = wait_result(eve, hung.json()["id"], seconds=NOTEBOOK_SECONDS + GRACE + SLACK + 60)
        elapsed = time.monotonic() - started
        assert answer["status"] == "error" and answer["score"] is None, answer
        assert "did not end within its time limit" in answer["error"], answer
        assert f"--notebook-timeout {NOTEBOOK_SECONDS}" in answer["error"], answer
        assert elapsed < NOTEBOOK_SECONDS + GRACE + SLACK, f"the result came after {elapsed:.0f} s"

        graded = wait_result(ann, honest.json()["id"], seconds=120)
        assert graded["status"] == "graded" and graded["score"] == graded["max_score"] == 11, graded

        time.sleep(3)  # a retry would have claimed the job again by now
        (job,) = [row for row in rows(server, "s001")]
        # status, claims: graded once, never re-queued
        assert job[3] == "error" and job[4] == 1, job
        with sqlite3.connect(server.db) as connection:
            (result,) = connection.execute(
                "SELECT result FROM submissions WHERE id = ?", (job[0],)
            ).fetchone()
        assert '"status": "out_of_time"' in result
        assert (
            server.log.read_text(encoding="utf-8").count(f"submission {job[0]}: grading (claim")
            == 1
        )
    finally:
        server.stop()

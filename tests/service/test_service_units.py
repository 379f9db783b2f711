"""Small parts of the service on synthetic data: the counted attempt, the results as GradeResults
(what an LMS export reads), settings, the examples' roster, the commands' one-line mistakes, and
grading on a Dask cluster (a real local one, on loopback)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import timedelta

import psutil
import pytest

from autograder.grading.result import GradeResult, PartScore
from autograder.service.database import Database
from autograder.service.models import Student, Submission
from autograder.service.results import counted_attempts, counted_results
from autograder.service.settings import now, parse_deadline, parse_rate
from bpe_labs import ROOT
from bpe_labs.examples import load_cases
from service_helpers import command, make_service, one_result


def _row(number, student, score, minutes, status="graded", late=False):
    result = GradeResult(
        student,
        "x.ipynb",
        status="graded" if status == "graded" else "worker_lost",
        lab="toy_bpe",
        score=score,
        max_score=11.0,
        parts={"merge": PartScore("merge", score, 11.0)},
    )
    return Submission(
        id=number,
        student_id=student,
        lab="toy_bpe",
        file_name="x.ipynb",
        sha256="0" * 64,
        size=1,
        notebook=b"{}",
        created_at=now() - timedelta(minutes=minutes),
        status=status,
        score=score,
        max_score=11.0,
        late=late,
        result=json.dumps(result.to_json()),
        claims=1,
        regrades=0,
        priority=0,
    )


def test_the_counted_attempt_is_the_last_graded_or_the_best():
    rows = [
        _row(1, "a", 9.0, 30),
        _row(2, "a", 11.0, 20),
        _row(3, "a", 5.0, 10),
        _row(4, "a", 0, 5, status="error"),
        _row(5, "b", 7.0, 40),
        _row(6, "b", 7.0, 30),
    ]
    last = counted_attempts(rows, "last")
    best = counted_attempts(rows, "best")
    # an error never counts
    assert last[("a", "toy_bpe")].id == 3 and best[("a", "toy_bpe")].id == 2
    # equal scores: the later one
    assert last[("b", "toy_bpe")].id == 6 and best[("b", "toy_bpe")].id == 6
    with pytest.raises(ValueError):
        counted_attempts(rows, "first")


def test_counted_results_are_grade_results_for_an_export(tmp_path):
    db = Database(str(tmp_path / "service.db"))
    db.migrate()
    with db.writing() as session:
        session.add_all([Student(student_id=s, added_at=now()) for s in ("a", "b")])
        session.flush()
        session.add_all(
            [_row(1, "a", 9.0, 30), _row(2, "a", 11.0, 20, late=True), _row(3, "b", 4.0, 5)]
        )
    results = counted_results(str(tmp_path / "service.db"), counted="best")
    db.close()
    assert [type(r) for r in results] == [GradeResult, GradeResult]
    assert [(r.student_id, r.score, r.identity) for r in results] == [
        ("a", 11.0, "late submission"),
        ("b", 4.0, ""),
    ]
    assert results[0].parts["merge"].score == 11.0


def test_settings_read_rates_and_deadlines_or_say_what_is_wrong():
    assert parse_rate("10/hour") == (10, 3600.0) and parse_rate("2/30min") == (2, 1800.0)
    for wrong in ("ten", "10/fortnight", "-1/hour"):
        with pytest.raises(ValueError, match="N/WINDOW"):
            parse_rate(wrong)
    lab, deadline = parse_deadline("toy_bpe=2026-12-01T23:59:00-05:00", "refuse")
    assert (lab, deadline.due.isoformat(), deadline.late) == (
        "toy_bpe",
        "2026-12-02T04:59:00",
        "refuse",
    )
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_deadline("toy_bpe=next friday")


def test_the_examples_roster_lists_every_example():
    listed = (ROOT / "examples" / "roster.csv").read_text(encoding="utf-8").splitlines()
    assert listed[0].startswith("student_id,name,email,")
    assert [line.split(",")[0] for line in listed[1:]] == [case["id"] for case in load_cases()] + [
        "dee-absent",
        "eve-absent",
    ], "examples/roster.csv is stale: run `python -m autograder examples`"


@pytest.mark.parametrize("args, said", [
    (["serve", "--deadline", "toy_bpe=soon"], "is not an ISO 8601 date"),
    (["serve", "--deadline", "no_such_lab=2026-01-01T00:00Z"], "no lab no_such_lab"),
    (["serve", "--rate", "lots"], "a rate is N/WINDOW"),
    (["serve", "--roster", "/no/such/roster.csv"], "the roster could not be read"),
    (["serve", "--scheduler", "tcp://192.0.2.7:8786"], "TLS"),
    (["tokens", "--reissue", "nobody"], "no student 'nobody'"),
    (["accounts", "add", "x", "--password-stdin"], "at least 10 characters"),
])
def test_a_mistake_gets_one_line_and_exit_code_2(tmp_path, args, said):
    done = command(*args, "--db", str(tmp_path / "x.db"), stdin="short\n", timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        said in done.stderr and done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
    )
    assert "Traceback" not in done.stderr


def test_grading_on_a_dask_cluster(tmp_path):
    from autograder.batch.dask_tls import LocalTLSCluster

    with LocalTLSCluster(1) as cluster:  # `dask scheduler` and `dask worker` over TLS
        server = make_service(tmp_path / "dask", "--scheduler", cluster.address, "--tls-dir",
                              str(cluster.certs.folder), students=["d001"])
        result = one_result(server, "d001")
    assert result["status"] == "graded" and result["score"] == 9
    assert "1 dask slot(s)" in server.log.read_text(encoding="utf-8")


def test_health_says_503_while_no_dask_worker_can_grade_and_200_once_one_joins(tmp_path):
    """Was: with no worker at all, jobs sat in `grading` while /health said ok."""
    import httpx

    from autograder.batch.dask_tls import LocalTLSCluster

    with LocalTLSCluster(0) as cluster:  # a scheduler, no worker yet
        server = make_service(tmp_path / "dask", "--scheduler", cluster.address, "--tls-dir",
                              str(cluster.certs.folder), students=["d001"])
        log = open(server.log, "a", encoding="utf-8")
        server.process = subprocess.Popen(
            [sys.executable, *server.program, "serve", *server.args],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            def health(want: str, seconds: float = 90) -> tuple[int, dict]:
                deadline = time.monotonic() + seconds
                seen = None
                while time.monotonic() < deadline:
                    assert server.process.poll() is None, server.log.read_text()[-3000:]
                    try:
                        answer = httpx.get(f"{server.url}/health", timeout=5)
                        seen = (answer.status_code, answer.json())
                        if seen[1].get("status") == want:
                            return seen
                    except httpx.HTTPError:
                        pass
                    time.sleep(0.3)
                raise AssertionError(
                    f"/health never said {want!r}: {seen}\n{server.log.read_text()[-2000:]}"
                )

            code, body = health("no workers")
            assert code == 503 and body["workers"] == 0
            cluster.add_worker()
            code, body = health("ok")
            assert code == 200 and body["workers"] == 1
        finally:
            server.stop()


def _child(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code])


def test_a_sleeping_job_leaves_its_slot_two_seconds_after_its_start_up():
    """The idle window slides: a notebook that computes at its start (a kernel starting) and then
    sleeps is idle once IDLE_SECONDS (2 s) of looks lie after its start-up, not a whole second
    window later (at a deadline, ten attackers' sleepers held the four slots for most of the first
    minute). The moments are the watch's own; the CPU seconds are the child's, measured."""
    from autograder.service.grading_process import IDLE_SECONDS, IdleWatch

    starts_then_sleeps = _child(
        "import time\nstart = time.process_time()\n"
        "while time.process_time() - start < 0.5: pass\ntime.sleep(120)"
    )
    try:
        watch = IdleWatch()
        assert watch.idle(1, starts_then_sleeps.pid, 0.0) is False
        child = psutil.Process(starts_then_sleeps.pid)
        while sum(child.cpu_times()[:2]) < 0.5:  # its start-up, however busy the machine
            time.sleep(0.05)
        time.sleep(0.2)
        seen = [watch.idle(1, starts_then_sleeps.pid, moment) for moment in range(1, 7)]
        # at 2 the window still holds the start-up (from the look at 0); at 3 it starts at 1
        assert IDLE_SECONDS == 2.0 and seen == [False, False, True, True, True, True]
    finally:
        starts_then_sleeps.kill()
        starts_then_sleeps.wait()


def test_a_computing_job_is_never_idle():
    from autograder.service.grading_process import IdleWatch

    computes = _child("while True: pass")
    try:
        watch = IdleWatch()
        seen = []
        for moment in range(0, 8):
            seen.append(watch.idle(2, computes.pid, float(moment)))
            time.sleep(0.3)  # real time, for real CPU seconds: 2% of 5 s is 0.1 s
        assert seen == [False] * 8
    finally:
        computes.kill()
        computes.wait()


def test_queue_places_are_computed_once_a_second_and_a_new_job_is_placed_at_once(
    tmp_path, monkeypatch
):
    """At a deadline every waiting student's poll asks its place: the order (the whole queue and
    everyone's recent grading time) is computed at most once per PLACES_FRESH per database, not
    per poll; a job newer than the kept order gets a new one."""
    from autograder.service import queue

    db = Database(str(tmp_path / "service.db"))
    db.migrate()
    queued = _queued_row
    computed = []
    order = queue._order
    monkeypatch.setattr(queue, "_order", lambda session: computed.append(1) or order(session))
    monkeypatch.setattr(queue, "PLACES_FRESH", 600.0)  # kept throughout, however slow the machine

    with db.writing() as session:
        session.add_all([Student(student_id=s, added_at=now()) for s in ("a", "b", "c")])
        session.flush()
        session.add_all([queued(1, "a"), queued(2, "b")])
    with db.reading() as session:
        rows = [session.get(Submission, number) for number in (1, 2)]
        places = [queue.position(session, row) for _ in range(50) for row in rows]
    assert places == [1, 2] * 50 and len(computed) == 1, len(computed)
    with db.writing() as session:
        session.add(queued(3, "c"))
    with db.reading() as session:
        assert queue.position(session, session.get(Submission, 3)) == 3 and len(computed) == 2
        assert queue.position(session, session.get(Submission, 1)) == 1 and len(computed) == 2
    monkeypatch.setattr(queue, "PLACES_FRESH", 0.0)  # kept no longer: computed again
    with db.reading() as session:
        assert queue.position(session, session.get(Submission, 2)) == 2 and len(computed) == 3
    db.close()


def _queued_row(number: int, student: str, status: str = "queued", seconds: float | None = None,
                minutes_ago: float = 0) -> Submission:
    """A submission row as the queue sees it (graded ones with their grading seconds)."""
    moment = now() - timedelta(minutes=minutes_ago)
    done = status in ("graded", "error")
    return Submission(id=number, student_id=student, lab="toy_bpe", file_name="t.ipynb",
                      sha256="0", size=1, notebook=b"{}", created_at=moment, late=False,
                      status=status, priority=0,
                      pending_key=None if done else f"{student}/{number}",
                      grading_key=student if status == "grading" else None,
                      claimed_at=moment if status != "queued" else None,
                      finished_at=moment if done else None, seconds=seconds, claims=0,
                      regrades=0)


def test_the_fair_order_counts_grading_time_in_half_minutes_then_first_come_first_served(
    tmp_path,
):
    """Students who used a few seconds each (a class at a deadline) are served in the order they
    came; one who used a minute (a sleeper) goes after them; among equals, one whose notebook is
    being graded goes after those who have none (they wait for their one slot anyway)."""
    from autograder.service import queue

    db = Database(str(tmp_path / "service.db"))
    db.migrate()
    with db.writing() as session:
        session.add_all([Student(student_id=s, added_at=now()) for s in "abcde"])
        session.flush()
        session.add_all([
            _queued_row(1, "a", "graded", seconds=2.5, minutes_ago=5),  # two notebooks graded
            _queued_row(2, "a", "graded", seconds=1.5, minutes_ago=4),
            _queued_row(3, "c", "graded", seconds=75.0, minutes_ago=3),  # a sleeper's minute
            _queued_row(4, "d", "grading", minutes_ago=0),  # being graded now
            _queued_row(10, "c"),  # the oldest queued: c's
            _queued_row(11, "a"),
            _queued_row(12, "d"),
            _queued_row(13, "b"),  # a newcomer, after a (4 s) as it came after
            _queued_row(14, "e"),
        ])
    with db.reading() as session:
        order = [job_id for _, job_id, _, _ in queue._order(session)]
    db.close()
    assert order == [11, 13, 14, 12, 10], order

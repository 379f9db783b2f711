"""The workers' front door (autograder/batch/workers.py), with no course: a :class:`Job` in, an
:class:`Event` out for each, whatever the job does to its own worker; ``run`` retries a lost job
once and makes the rows of the ones lost twice or out of time."""
from __future__ import annotations

import multiprocessing
import os
import signal
import time

import psutil
import pytest

from autograder.batch.workers import Job, Outcome, WorkerPool


def act(kind: str, value: int = 0):
    """A stand-in for a grading: does to its own worker what a hostile file might."""
    if kind == "double":
        return 2 * value
    if kind == "raise":
        raise ValueError(f"no {value}")
    if kind == "exit":
        os._exit(3)
    if kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "hang":
        time.sleep(3600)
    if kind == "unpicklable":
        return lambda: value
    raise AssertionError(kind)


def events_until(pool: WorkerPool, count: int, seconds: float = 60) -> list:
    events, ends = [], time.monotonic() + seconds
    while len(events) < count and time.monotonic() < ends:
        events += pool.wait(0.2)
    return events


def test_submit_wait_and_close_report_each_job_once():
    pool = WorkerPool(act, 3, on_lost=None, budget=2, poll=0.1)
    try:
        jobs = [Job(1, ("double", 21)), Job(2, ("raise", 7)), Job(3, ("exit",))]
        pids = {pool.submit(job) for job in jobs}
        assert len(pids) == 3 and pool.free() == 0
        with pytest.raises(RuntimeError, match="busy"):
            pool.submit(Job(4, ("double", 1)))
        events = {event.job.id: event for event in events_until(pool, 3)}
        assert (events[1].outcome, events[1].result) == (Outcome.DONE, 42)
        assert events[2].outcome is Outcome.FAILED and events[2].reason == "ValueError: no 7"
        assert events[3].outcome is Outcome.LOST and "exit code 3" in events[3].reason
        assert events[1].job == jobs[0], "the event carries the job as it was submitted"
        assert pool.free() == 3
        # a worker that finished its job takes the next one: no new process
        assert pool.submit(Job(5, ("double", 2))) in pids
        (done,) = events_until(pool, 1)
        assert (done.job.id, done.result) == (5, 4)
    finally:
        running = pool.close()
    assert running == [] and not pool.workers


def test_a_job_past_its_time_is_ended_with_every_process_it_started():
    pool = WorkerPool(act, 1, on_lost=None, budget=1, poll=0.1)
    pid = pool.submit(Job(1, ("hang",)))
    started = time.monotonic()
    (event,) = events_until(pool, 1, seconds=30)
    assert event.outcome is Outcome.TIMED_OUT and time.monotonic() - started >= 1
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert pool.close() == []


def test_close_gives_back_the_jobs_still_running():
    pool = WorkerPool(act, 2, on_lost=None, budget=60, poll=0.1)
    hung = Job(7, ("hang",))
    pids = [pool.submit(hung), pool.submit(Job(8, ("double", 1)))]
    events_until(pool, 1)
    assert pool.close() == [hung]
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                   for pid in pids)


def test_a_wake_ends_the_wait_early():
    pool = WorkerPool(act, 1, on_lost=None, budget=60)
    ours, theirs = multiprocessing.Pipe()
    try:
        pool.submit(Job(1, ("hang",)))
        theirs.send_bytes(b"x")
        started = time.monotonic()
        assert pool.wait(30, wake=ours) == []
        assert time.monotonic() - started < 20
        assert not ours.poll(), "the wake is drained"
    finally:
        pool.close()


def test_run_retries_a_lost_job_once_then_makes_its_row():
    def lost(job: Job, reason: str):
        return ("lost", job.attempt, reason)

    def late(job: Job, seconds: float):
        return ("late", seconds)

    pool = WorkerPool(act, 2, on_lost=lost, budget=1, poll=0.1, on_timeout=late)
    jobs = [Job(i, args, name=args[0]) for i, args in
            enumerate([("double", 5), ("kill",), ("raise", 1), ("hang",), ("unpicklable",)])]
    results = {job.name: result for job, result in pool.run(jobs)}
    assert results["double"] == 10
    assert results["kill"][:2] == ("lost", 2) and results["kill"][2].endswith("twice")
    assert results["raise"] == ("lost", 1, "ValueError: no 1"), "a raising job is not run again"
    assert results["hang"] == ("late", 1)
    assert results["unpicklable"][0] == "lost" and "could not be sent" in results["unpicklable"][2]
    assert not pool.workers, "no worker is left behind"

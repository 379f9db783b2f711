"""The batch survives its workers: a worker killed, stopped, hung or out of memory costs at most
its own file, which is graded again once in a fresh worker; never BrokenProcessPool, never a
freeze."""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import psutil
import pytest

from adversarial import correct_notebook, dump
from autograder.batch.run import grade_folder
from autograder.grading.grade import Settings
from autograder.kernel.session import Limits
from autograder.batch.workers import Job, WorkerPool

SETTINGS = Settings(limits=Limits(cell_seconds=5, call_seconds=3, notebook_seconds=90,
                                  memory_bytes=int(1.5 * 1024**3)), part_seconds=20)


def misbehave(kind: str, marker: str) -> dict:
    """A stand-in for grade_file that does to its own worker what a hostile file might."""
    first = not os.path.exists(marker)
    Path(marker).touch()
    if kind == "killed-once" and first or kind == "killed-always":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "stopped-once" and first:
        os.kill(os.getpid(), signal.SIGSTOP)
    if kind == "hangs-once" and first:
        time.sleep(3600)
    if kind == "exits":
        os._exit(3)
    return {"kind": kind, "pid": os.getpid()}


def lost(job: Job, reason):
    return {"kind": job.args[0], "lost": reason}


def test_each_lost_worker_costs_at_most_its_own_job(tmp_path):
    kinds = ["fine", "killed-once", "stopped-once", "hangs-once", "killed-always", "exits",
             "fine-too"]
    pool = WorkerPool(misbehave, workers=2, on_lost=lost, budget=6, stopped_grace=1, poll=0.2)
    started = time.monotonic()
    jobs = [Job(index, (kind, str(tmp_path / kind)), name=kind) for index, kind in enumerate(kinds)]
    results = {job.name: result for job, result in pool.run(jobs)}
    assert sorted(results) == sorted(kinds), "one result per job"
    for kind in ("fine", "fine-too", "killed-once", "stopped-once", "hangs-once"):
        assert results[kind].get("kind") == kind and "lost" not in results[kind], kind
    assert (
        "twice" in results["killed-always"]["lost"]
        and "exit code -9" in results["killed-always"]["lost"]
    )
    assert "exit code 3" in results["exits"]["lost"]
    assert time.monotonic() - started < 120, "the batch must not freeze"
    assert not pool.workers, "no worker is left behind"


def _kill_busy_workers(parent: psutil.Process, how: signal.Signals, count: int,
                       done: threading.Event, hits: list, others: frozenset = frozenset()):
    """From the outside, as a crash or an attack would: signal a worker while it grades (it has a
    kernel). ``others``: children this process had before the batch (another test's server, with
    its own children, must never be taken for a grading worker)."""
    while not done.is_set() and len(hits) < count:
        for worker in parent.children():
            if worker.pid in others:
                continue
            try:
                # this process's own kernel maker (a kernel of an earlier test may be ending)
                if "--zygote" in worker.cmdline():
                    continue
                # its kernel is running: it is grading
                if worker.pid not in hits and worker.children():
                    os.kill(worker.pid, how)
                    hits.append(worker.pid)
                    break
            except (psutil.Error, OSError):
                continue
        time.sleep(0.2)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "stopped"])
def test_a_batch_survives_a_worker_killed_or_stopped_from_outside(tmp_path, how):
    for student in ("amy", "ben", "cal"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        (tmp_path / "sub" / f"{student}_toy_bpe.ipynb").write_bytes(dump(correct_notebook()))
    done, hits = threading.Event(), []
    # started before this batch
    others = frozenset(child.pid for child in psutil.Process().children())
    killer = threading.Thread(target=_kill_busy_workers,
                              args=(psutil.Process(), how, 1, done, hits, others))
    killer.start()
    try:
        results = grade_folder(tmp_path / "sub", tmp_path / "out", SETTINGS, workers=2,
                               progress=False)
    finally:
        done.set()
        killer.join()
    assert hits, "the test must have hit a worker"
    assert sorted(r.student_id for r in results) == ["amy", "ben", "cal"]
    assert {r.status for r in results} == {"graded"}, [r.message for r in results]
    assert {r.score for r in results} == {11.0}
    for pid in hits:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_file_that_trips_the_workers_memory_limit_costs_its_row_only(tmp_path):
    """Each grading worker has its own address-space limit: a file too big to read within it gets
    an error row, and the honest file next to it is graded in full."""
    raw = dump(correct_notebook())
    # 24 MB of "[]," in a cell's empty metadata: each becomes a list object of 56 bytes, twice over
    # in intake. The file stays valid JSON, so only the memory limit can stop it (with a stray comma
    # it came out "invalid_json" whenever the worker had the room to read it to the end).
    padding = b'"padding": [' + b"[]," * 8_000_000 + b'[]]'
    assert b'"metadata": {}' in raw
    big = raw.replace(b'"metadata": {}', b'"metadata": {' + padding + b'}', 1)
    assert len(big) > len(raw) + 20_000_000
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "big_toy_bpe.ipynb").write_bytes(big)
    (tmp_path / "sub" / "amy_toy_bpe.ipynb").write_bytes(dump(correct_notebook()))
    baseline = psutil.Process().memory_info().vms  # a worker starts as a fork of this process
    settings = Settings(SETTINGS.limits, part_seconds=SETTINGS.part_seconds,
                        worker_memory_bytes=baseline + 600 * 1024**2)
    results = {r.student_id: r
               for r in grade_folder(tmp_path / "sub", tmp_path / "out", settings, workers=1,
                                     progress=False)}
    assert results["amy"].status == "graded" and results["amy"].score == 11.0
    assert results["big"].status in ("grader_error", "worker_lost")
    assert "MemoryError" in results["big"].message or "ended" in results["big"].message

"""Local grading workers that a hostile file cannot take down with it.

Each worker is a process of its own, fed one file at a time over a pipe, with an address-space
limit of its own (``RLIMIT_AS``). The parent watches every worker from outside: one that dies
(killed, out of memory, ``os._exit``) or stops (``SIGSTOP``) is killed with every process it
started, and its file is graded once more in a fresh worker (a second loss gives the file a
``worker_lost`` row); one still busy when the file's time is up (``budget``: even inside a single C
call that never returns) is killed the same way, and the file gets its ``on_timeout`` row at once.
The batch goes on either way: no ``BrokenProcessPool``, no freeze. What a killed worker left in
the temporary folder is swept (``tempdirs.py``).

Every grader runs its files this way, so that ``--notebook-timeout`` holds from outside the work:
``--workers N`` with N workers, ``--workers 0`` and Gradescope's runner with one, and each Dask
worker with one of its own (:func:`run_watched`), kept from file to file.
"""
from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Callable, Iterator, cast

import psutil

from autograder import isolation, tempdirs


def _serve(connection, function: Callable, memory_bytes: int, siblings: list) -> None:
    """A worker's life: set its own memory limit, then grade whatever the parent sends."""
    # the parent's ends of the other workers' pipes, inherited by fork: without
    for other in siblings:
        other.close()       # closing them, a sibling would never see end-of-file if the parent died
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # A grader killed hard takes its workers along (and they their zygotes and kernels): waiting for
    # EOF is not enough, as a worker's siblings hold the parent's end of its pipe too.
    parent = os.getppid()
    isolation.die_with_parent(signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)
    if memory_bytes > 0:
        # the soft limit only: a kernel this worker starts sets its own (lower or higher) limit
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(
            resource.RLIMIT_AS,
            (memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard), hard),
        )
    while True:
        try:
            job = connection.recv()
        except EOFError:
            return
        if job is None:
            return
        job_id, args = job
        answer: tuple[object, object, str | None]
        try:
            answer = (job_id, function(*args), None)
        except BaseException as error:  # the function guards itself; this is the last line
            answer = (job_id, None, f"{type(error).__name__}: {str(error)[:300]}")
        try:
            connection.send(answer)
        except Exception as error:  # an unpicklable or oversized result
            connection.send(
                (job_id, None, f"the result could not be sent ({type(error).__name__})")
            )


# How often the watchdog notes a busy worker's descendants (for ``_kill`` to end a dead worker's
# orphans). Each look reads every process's /proc/PID/stat: done on every poll it took a tenth of a
# core in the service's grading process (4 workers x 4 polls a second). Everything a worker starts
# dies with it anyway (PR_SET_PDEATHSIG); this is the second net.
DESCENDANTS_SECONDS = 1.0


@dataclass
class _Worker:
    process: BaseProcess
    connection: Connection
    job: tuple | None = None  # (job id, args, attempt)
    started: float = 0.0
    stopped_since: float | None = None
    descendants: set = field(default_factory=set)  # (pid, start time) of every process it started
    scanned: float = float("-inf")  # when ``descendants`` was last brought up to date

    @property
    def pid(self) -> int:
        """The process's id: a worker's process is started as soon as it is made."""
        if self.process.pid is None:
            raise RuntimeError("a worker whose process was never started")
        return self.process.pid


class WorkerPool:
    """``run(jobs)`` yields ``(args, result)`` for every job, results of lost workers included.

    ``on_lost(args, reason)`` makes the row of a job whose worker was lost twice; ``budget`` is the
    most seconds one job may take before the watchdog calls its worker hung.
    """

    def __init__(self, function: Callable, workers: int, on_lost: Callable | None, budget: float,
                 memory_bytes: int = 0, stopped_grace: float = 2.0, poll: float = 0.5,
                 on_timeout: Callable | None = None, keep: bool = False):
        self.function, self.size, self.on_lost = function, max(1, workers), on_lost
        self.budget, self.memory_bytes, self.stopped_grace, self.poll = (
            budget,
            memory_bytes,
            stopped_grace,
            poll,
        )
        # on_timeout(args, budget): the row of a job still running when its time was up (not graded
        # again: its time is spent). None: such a job is retried like a lost one.
        self.on_timeout = on_timeout
        # keep idle workers between run() calls (a Dask worker's one), until close()
        self.keep = keep
        self.context = multiprocessing.get_context("fork")
        self.workers: list[_Worker] = []
        self.lost: list[str] = []  # what the watchdog did, for the log

    def _spawn(self) -> _Worker:
        parent, child = self.context.Pipe()
        siblings = [worker.connection for worker in self.workers] + [parent]
        process = self.context.Process(
            target=_serve, args=(child, self.function, self.memory_bytes, siblings), daemon=True
        )
        _start_even_in_a_daemon(process)
        child.close()
        worker = _Worker(process, parent)
        self.workers.append(worker)
        return worker

    def _kill(self, worker: _Worker) -> None:
        """The worker and every process it started (kernels run in sessions of their own)."""
        try:
            worker.descendants |= {
                (p.pid, p.create_time())
                for p in psutil.Process(worker.pid).children(recursive=True)
            }
        except psutil.Error:
            pass
        try:
            os.kill(worker.pid, signal.SIGKILL)
        except OSError:
            pass
        for pid, started in worker.descendants:  # orphans of a dead worker too, never a reused pid
            try:
                process = psutil.Process(pid)
                if process.create_time() == started:
                    process.kill()
            except psutil.Error:
                pass
        worker.process.join(5)
        worker.connection.close()
        self.workers.remove(worker)
        # the folders of the worker (its grading folder, zygote, kernels) whose owner is gone
        tempdirs.sweep()
        tempdirs.sweep_cgroups()

    def _health(self, worker: _Worker, now: float) -> str | None:
        """Why the watchdog must end this busy worker, if it must."""
        if not worker.process.is_alive():
            return f"the grading process ended (exit code {worker.process.exitcode})"
        try:
            me = psutil.Process(worker.pid)
            if now - worker.scanned >= DESCENDANTS_SECONDS:
                worker.descendants |= {
                    (p.pid, p.create_time()) for p in me.children(recursive=True)
                }
                worker.scanned = now
            state = me.status()
        except psutil.Error:
            return "the grading process vanished"
        if state in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP):
            worker.stopped_since = worker.stopped_since or now
            if now - worker.stopped_since >= self.stopped_grace:
                return "the grading process was stopped (SIGSTOP or a debugger)"
        else:
            worker.stopped_since = None
        if now - worker.started > self.budget:
            return TIMED_OUT
        return None

    def run(self, jobs: list[tuple]) -> Iterator[tuple[tuple, object]]:
        queue = deque((index, args, 1) for index, args in enumerate(jobs))
        try:
            while queue or any(w.job for w in self.workers):
                for worker in [w for w in self.workers if w.job is None]:
                    if not queue:
                        break
                    yield from self._assign(worker, queue)
                while queue and len(self.workers) < self.size:
                    yield from self._assign(self._spawn(), queue)
                busy = {w.connection: w for w in self.workers if w.job}
                for ready in wait(list(busy), timeout=self.poll):
                    # wait gives back some of the objects it was given: these connections
                    connection = cast(Connection, ready)
                    worker = busy[connection]
                    try:
                        job_id, result, failure = connection.recv()
                    except (EOFError, OSError):
                        continue  # it died: the health check below sees it
                    if worker.job is None:  # (busy: never)
                        continue
                    args = worker.job[1]
                    worker.job = None
                    if failure is not None:
                        result = self._lost_row(args, failure)
                    yield args, result
                now = time.monotonic()
                for worker in self.workers[:]:
                    if not worker.job:
                        continue
                    reason = self._health(worker, now)
                    if reason:
                        job_id, args, attempt = worker.job
                        self._kill(worker)
                        if reason is TIMED_OUT and self.on_timeout is not None:
                            self.lost.append(
                                f"{args[0]}: still running after {self.budget:g} s: ended"
                            )
                            yield args, self.on_timeout(args, self.budget)
                            continue
                        if reason is TIMED_OUT:
                            reason = f"the grading process did not finish within {self.budget:g} s"
                        self.lost.append(f"{args[0]}: {reason} (attempt {attempt})")
                        if attempt < 2:
                            queue.appendleft((job_id, args, attempt + 1))
                        else:
                            yield args, self._lost_row(args, f"{reason}, twice")
        finally:
            for worker in list(self.workers):
                if self.keep and worker.job is None and worker.process.is_alive():
                    continue
                if worker.job is None and worker.process.is_alive():
                    try:
                        worker.connection.send(None)
                    except OSError:
                        pass
                    worker.process.join(10)
                if worker.process.is_alive() or worker.job is not None:
                    self._kill(worker)
                elif worker in self.workers:
                    worker.connection.close()
                    self.workers.remove(worker)

    def _lost_row(self, args: tuple, reason: str) -> object:
        if self.on_lost is None:  # a pool whose jobs are fed from outside (the service's) has none
            raise RuntimeError(f"a job was lost ({reason}) and this pool has no on_lost")
        return self.on_lost(args, reason)

    def close(self) -> None:
        """End every worker (a kept pool's, between run() calls)."""
        self.keep = False
        for _ in self.run([]):
            pass

    def _assign(self, worker: _Worker, queue: deque) -> Iterator:
        job_id, args, attempt = queue.popleft()
        try:
            worker.connection.send((job_id, args))
        except (OSError, ValueError):  # the worker died while idle: a fresh one takes the job
            queue.appendleft((job_id, args, attempt))
            self._kill(worker)
            return
        worker.job, worker.started, worker.stopped_since = (
            (job_id, args, attempt),
            time.monotonic(),
            None,
        )
        yield from ()


TIMED_OUT = "timed out"  # _health's reason for a job whose time is up


def _start_even_in_a_daemon(process) -> None:
    """``process.start()``, also from a daemonic process (a Dask worker), which multiprocessing
    refuses to let have children: the child dies with its parent all the same (``PR_SET_PDEATHSIG``
    in :func:`_serve`)."""
    config = getattr(multiprocessing.current_process(), "_config", {})
    daemonic = config.get("daemon")
    if daemonic:
        config["daemon"] = False
    try:
        process.start()
    finally:
        if daemonic:
            config["daemon"] = daemonic


_watched = threading.local()


def run_watched(
    function: Callable,
    args: tuple,
    budget: float,
    on_lost: Callable,
    on_timeout: Callable,
    memory_bytes: int = 0,
):
    """``function(*args)`` in a grading process of this thread's own, watched from here (see the
    module docstring), kept from call to call; the result, or ``on_timeout(args, budget)`` /
    ``on_lost(args, reason)``. For a Dask worker: the worker's own threads (its heartbeats) never
    wait on a call that holds the GIL, and a file's time holds however its grading hangs."""
    pool = getattr(_watched, "pool", None)
    if pool is None or pool.function is not function or pool.memory_bytes != memory_bytes:
        if pool is not None:
            pool.close()
        pool = _watched.pool = WorkerPool(
            function,
            1,
            on_lost=on_lost,
            budget=budget,
            memory_bytes=memory_bytes,
            on_timeout=on_timeout,
            keep=True,
        )
    pool.budget, pool.on_lost, pool.on_timeout = budget, on_lost, on_timeout
    (_, result), = pool.run([args])
    return result


def close_watched() -> None:
    """End this thread's grading process of :func:`run_watched` (and so its zygote and kernels)."""
    pool = getattr(_watched, "pool", None)
    if pool is not None:
        _watched.pool = None
        pool.close()

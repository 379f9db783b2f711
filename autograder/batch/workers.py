"""Local grading workers that a hostile file cannot take down with it.

Each worker is a process of its own, fed one file at a time over a pipe, with an address-space
limit of its own (``RLIMIT_AS``). The parent watches every worker from outside: one that dies
(killed, out of memory, ``os._exit``) or stops (``SIGSTOP``) is killed with every process it
started, and its file is graded once more in a fresh worker (a second loss gives the file a
``worker_lost`` row); one still busy when the file's time is up (``budget``: even inside a single C
call that never returns) is killed the same way, and the file gets its ``on_timeout`` row at once.
The batch goes on either way: no ``BrokenProcessPool``, no freeze. What a killed worker left in
the temporary folder is swept (``kernel/tempdirs.py``).

Every grader runs its files this way, so that ``--notebook-timeout`` holds from outside the work:
``--workers N`` with N workers, ``--workers 0`` and Gradescope's runner with one, and each Dask
worker with one of its own (:func:`run_watched`), kept from file to file.

The front door: a :class:`Job` (its id, its arguments, its attempt), and :class:`WorkerPool`'s
``run`` (a batch: the pool retries and makes the rows), or ``submit`` / ``wait`` / ``close`` (a
caller with a queue of its own, the service's grading process: the pool reports each job's
:class:`Event`). Nothing outside this module touches a worker.
"""
from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from enum import Enum
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Callable, Generic, Iterable, Iterator, TypeVar, cast

import psutil

from autograder.kernel import isolation, tempdirs

A = TypeVar("A", bound=tuple)  # a job's arguments: a tuple, or a NamedTuple that names them


@dataclass(frozen=True)
class Job(Generic[A]):
    """One call a worker makes: ``function(*args)``. ``attempt`` counts from 1 (a job whose worker
    was lost is tried once more, as attempt 2); ``name`` is what the log calls it (the file)."""

    id: int
    args: A
    attempt: int = 1
    name: str = ""

    def again(self) -> Job[A]:
        """The same job, tried once more in a fresh worker."""
        return replace(self, attempt=self.attempt + 1)


class Outcome(Enum):
    """How a job ended (an :class:`Event`)."""

    DONE = "done"  # the function returned: ``result``
    FAILED = "failed"  # the function raised, or its result could not be sent back: ``reason``
    LOST = "lost"  # its worker died or stayed stopped: ``reason`` (the job may be tried again)
    TIMED_OUT = "timed out"  # its worker was still busy when the job's time was up: ended


@dataclass(frozen=True)
class Event:
    """What :meth:`WorkerPool.wait` reports of one job."""

    job: Job
    outcome: Outcome
    result: object = None
    reason: str = ""


@dataclass(frozen=True)
class _Answer:
    """What a worker sends back for a job."""

    job_id: int
    result: object = None
    failure: str | None = None


def _serve(connection, function: Callable, memory_bytes: int, siblings: list) -> None:
    """A worker's life: set its own memory limit, then run whatever job the parent sends."""
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
        answer: _Answer
        try:
            answer = _Answer(job.id, function(*job.args))
        except BaseException as error:  # the function guards itself; this is the last line
            answer = _Answer(job.id, failure=f"{type(error).__name__}: {str(error)[:300]}")
        try:
            connection.send(answer)
        except Exception as error:  # an unpicklable or oversized result
            connection.send(
                _Answer(job.id, failure=f"the result could not be sent ({type(error).__name__})")
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
    job: Job | None = None
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
    """At most ``workers`` worker processes, each running one :class:`Job` at a time, watched.

    Two ways to drive it:

    - ``run(jobs)`` yields ``(job, result)`` for every job, once each: a job whose worker is lost is
      tried once more, then gets ``on_lost(job, reason)``; one still running after ``budget``
      seconds gets ``on_timeout(job, budget)`` (or, without ``on_timeout``, counts as lost).
    - ``submit(job)`` whenever :meth:`free` says a worker is free, ``wait(timeout)`` for the
      :class:`Event` of each job that ended, ``close()`` at the end: what a caller with a queue of
      its own (the service's grading process) does; the pool then decides nothing for it.
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
        # on_timeout(job, budget): the row of a job still running when its time was up (not run
        # again: its time is spent). None: such a job is retried like a lost one.
        self.on_timeout = on_timeout
        # keep idle workers between run() calls (a Dask worker's one), until close()
        self.keep = keep
        self.context = multiprocessing.get_context("fork")
        self.workers: list[_Worker] = []
        self.lost: list[str] = []  # what the watchdog did, for the log

    # -- the front door -----------------------------------------------------------------------

    def free(self) -> int:
        """How many more jobs :meth:`submit` takes now."""
        return self.size - sum(1 for worker in self.workers if worker.job is not None)

    def submit(self, job: Job) -> int:
        """Start ``job`` in an idle worker (or a fresh one); returns the worker's process id."""
        if self.free() <= 0:
            raise RuntimeError(f"all {self.size} workers are busy")
        idle = [worker for worker in self.workers if worker.job is None]
        worker = idle[0] if idle else self._spawn()
        try:
            worker.connection.send(job)
        except (OSError, ValueError):  # it died while idle: a fresh one takes the job
            self._kill(worker)
            worker = self._spawn()
            worker.connection.send(job)
        worker.job, worker.started, worker.stopped_since = job, time.monotonic(), None
        return worker.pid

    def wait(self, timeout: float, wake: Connection | None = None) -> list[Event]:
        """The jobs that ended within ``timeout`` seconds (or sooner: at the first answer, or when
        anything is sent on ``wake``, which is then drained). A worker found dead, stopped past its
        grace or busy past ``budget`` is killed with every process it started: its job is LOST or
        TIMED_OUT, and never tried again by the pool itself."""
        busy = {worker.connection: worker for worker in self.workers if worker.job is not None}
        events = []
        for ready in wait(list(busy) + ([wake] if wake is not None else []), timeout=timeout):
            if ready is wake:
                drain(wake)
                continue
            # wait gives back some of the objects it was given: these connections
            worker = busy[cast(Connection, ready)]
            try:
                answer = worker.connection.recv()
            except (EOFError, OSError):
                continue  # it died: the health check below sees it
            job, worker.job = worker.job, None
            if job is None or answer.job_id != job.id:  # (never: one job at a time)
                continue
            if answer.failure is not None:
                events.append(Event(job, Outcome.FAILED, reason=answer.failure))
            else:
                events.append(Event(job, Outcome.DONE, result=answer.result))
        now = time.monotonic()
        for worker in self.workers[:]:
            job = worker.job
            if job is None:
                continue
            reason = self._health(worker, now)
            if reason:
                self._kill(worker)
                if reason is TIMED_OUT:
                    events.append(Event(job, Outcome.TIMED_OUT, reason=reason))
                else:
                    events.append(Event(job, Outcome.LOST, reason=reason))
        return events

    def close(self) -> list[Job]:
        """End every worker: an idle one is told to stop, a busy one is killed. Returns the jobs
        that were still running."""
        self.keep = False
        return self._end_workers()

    def run(self, jobs: Iterable[Job]) -> Iterator[tuple[Job, object]]:
        """Every job's ``(job, result)``, as they end (see the class docstring)."""
        queue = deque(jobs)
        try:
            while queue or self.free() < self.size:
                while queue and self.free() > 0:
                    self.submit(queue.popleft())
                for event in self.wait(self.poll):
                    job = event.job
                    if event.outcome is Outcome.DONE:
                        yield job, event.result
                    elif event.outcome is Outcome.FAILED:
                        yield job, self._lost_row(job, event.reason)
                    elif event.outcome is Outcome.TIMED_OUT and self.on_timeout is not None:
                        self.lost.append(
                            f"{job.name}: still running after {self.budget:g} s: ended"
                        )
                        yield job, self.on_timeout(job, self.budget)
                    else:
                        reason = event.reason
                        if event.outcome is Outcome.TIMED_OUT:
                            reason = f"the grading process did not finish within {self.budget:g} s"
                        self.lost.append(f"{job.name}: {reason} (attempt {job.attempt})")
                        if job.attempt < 2:
                            queue.appendleft(job.again())
                        else:
                            yield job, self._lost_row(job, f"{reason}, twice")
        finally:
            self._end_workers()

    # -- the back rooms -----------------------------------------------------------------------

    def _end_workers(self) -> list[Job]:
        running = []
        for worker in list(self.workers):
            if worker.job is not None:
                running.append(worker.job)
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
        return running

    def _lost_row(self, job: Job, reason: str) -> object:
        if self.on_lost is None:  # a pool whose jobs are fed from outside (the service's) has none
            raise RuntimeError(f"a job was lost ({reason}) and this pool has no on_lost")
        return self.on_lost(job, reason)

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


def drain(connection: Connection) -> None:
    """Read away whatever was sent on ``connection`` (a wake-up pipe)."""
    try:
        while connection.poll():
            connection.recv_bytes()
    except (EOFError, OSError):
        pass


_watched = threading.local()


def run_watched(
    function: Callable,
    job: Job,
    budget: float,
    on_lost: Callable,
    on_timeout: Callable,
    memory_bytes: int = 0,
):
    """``function(*job.args)`` in a grading process of this thread's own, watched from here (see
    the module docstring), kept from call to call; the result, or ``on_timeout(job, budget)`` /
    ``on_lost(job, reason)``. For a Dask worker: the worker's own threads (its heartbeats) never
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
    (_, result), = pool.run([job])
    return result


def close_watched() -> None:
    """End this thread's grading process of :func:`run_watched` (and so its zygote and kernels)."""
    pool = getattr(_watched, "pool", None)
    if pool is not None:
        _watched.pool = None
        pool.close()

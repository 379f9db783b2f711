"""Grading on a Dask cluster that says when it cannot grade.

Before any file is sent, every worker is asked (a task pinned to it) whether it can grade: the
course imports there, and its kernels get the whole boundary (:func:`worker_fitness`). Only the
workers that can take files; a worker offering the fence only takes none unless the instructor
passes ``--allow-fence`` (its rows then say ``fence`` in grades.csv). A worker that fails the check
later, on a file (:class:`WorkerUnfit`), is taken out of rotation and the file goes to another one.
With no worker that can grade, the batch waits a bounded time and says so; a scheduler lost in the
middle stops the batch with one line (:class:`SchedulerLost`) and no row for the files it had not
graded, so the same command resumes.
"""
from __future__ import annotations

import contextlib
import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from autograder.batch.dask_options import WAIT_SECONDS
from autograder.grading.grade import Settings, error_result
from autograder.grading.result import WORKER_LOST, GradeResult


class SchedulerLost(RuntimeError):
    """The scheduler went away in the middle of a batch."""


class NoWorkers(RuntimeError):
    """No worker that can grade joined within the wait."""


class WorkerUnfit(RuntimeError):
    """Raised by a task on a worker that cannot grade: ``worker`` (its address) and why."""

    def __init__(self, worker: str, reason: str):
        super().__init__(f"{worker}: {reason}")
        self.worker, self.reason = worker, reason

    def __reduce__(self):
        return WorkerUnfit, (self.worker, self.reason)


@functools.lru_cache(maxsize=8)
def worker_fitness(course_spec: str, allow_fence: bool) -> str | None:
    """On a worker: None when it can grade ``course_spec``, else why not, in one line. Checked
    once per worker process (the isolation status is probed with a real kernel)."""
    from autograder.course import use
    from autograder.kernel.boundary import full_boundary, refused
    from autograder.kernel.probe import isolation_status

    try:
        course = use(course_spec)
        course.lab_ids()
    except Exception as error:
        return f"the course {course_spec} cannot be imported here ({type(error).__name__}: " \
               f"{str(error)[:200]})"
    status = isolation_status()
    if refused(status):
        return f"its kernels would run as root: {status}"
    if not full_boundary(status) and not allow_fence:
        return f"its kernels get less than the boundary ({status}); --allow-fence grades there"
    return None


def _this_worker() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except Exception:  # not on a worker (a test calling the task directly)
        return "this process"


def check_worker(course_spec: str, allow_fence: bool) -> str | None:
    """The fitness task pinned to each worker."""
    return worker_fitness(course_spec, allow_fence)


def grade_on_worker(grade: Callable[..., GradeResult], args: tuple, course_spec: str,
                    allow_fence: bool) -> GradeResult:
    """One file's task, ``grade(*args)`` (``deadline.grade_within_time``, or the service's
    ``grade_notebook_within_time``): only where the worker can grade, else
    :class:`WorkerUnfit`."""
    reason = worker_fitness(course_spec, allow_fence)
    if reason is not None:
        raise WorkerUnfit(_this_worker(), reason)
    return grade(*args)


@dataclass
class Rotation:
    """The workers that take files, and why the others do not."""

    client: object
    course_spec: str
    allow_fence: bool
    wait_seconds: float
    say: Callable[[str], None]
    fit: frozenset = frozenset()
    out: dict | None = None  # address -> why it takes no files

    def _ask(self) -> None:
        """Check each worker not checked yet; one found fit keeps its answer while it stays (asked
        again, a worker grading a notebook answers only once that ends: the service waited up to
        30 s for it at every look, then took it out of rotation), one that left is forgotten."""
        client = self.client
        workers = list(client.scheduler_info()["workers"])  # type: ignore[attr-defined]
        futures = {
            address: client.submit(  # type: ignore[attr-defined]
                check_worker, self.course_spec, self.allow_fence, workers=[address],
                allow_other_workers=False, pure=False, key=f"bpe-fitness-{address}-{time.time()}")
            for address in workers if address not in (self.out or {}) and address not in self.fit
        }
        out = dict(self.out or {})
        for address, future in futures.items():
            try:
                reason = future.result(timeout=max(self.wait_seconds, 30))
            except Exception as error:
                reason = f"it did not answer the check ({type(error).__name__})"
            if reason is not None:
                out[address] = reason
        self.out = out
        self.fit = frozenset(a for a in self.fit if a in workers) | frozenset(
            a for a in futures if a not in out)

    def ready(self, scheduler: str) -> frozenset:
        """The workers that can grade, waiting up to ``wait_seconds`` for one; raises
        :class:`NoWorkers` after that."""
        deadline = time.monotonic() + self.wait_seconds
        said = False
        told: set = set()
        while True:
            self._ask()
            for address, reason in (self.out or {}).items():
                if address not in told:
                    self.say(f"Dask worker {address} takes no files: {reason}")
                    told.add(address)
            if self.fit:
                return self.fit
            if time.monotonic() >= deadline:
                raise NoWorkers(
                    f"no Dask worker that can grade joined the scheduler at {scheduler} within "
                    f"{self.wait_seconds:g} s ({len(self.out or {})} connected that cannot): start "
                    "workers (docs/GRADING.md) and run the same command again"
                )
            if not said:
                self.say(f"waiting for Dask workers that can grade at {scheduler} (up to "
                         f"{self.wait_seconds:g} s)...")
                said = True
            time.sleep(1.0)

    def take_out(self, address: str, reason: str) -> None:
        self.out = {**(self.out or {}), address: reason}
        self.fit = self.fit - {address}
        self.say(f"Dask worker {address} taken out of rotation: {reason}")


def _client_lost(client) -> bool:
    return getattr(client, "status", "running") not in ("running", "newly-created")


def run_dask(jobs: list[tuple[Path, str]], settings: Settings, scheduler: str, security,
             course_spec: str, allow_fence: bool = False, wait_seconds: float = WAIT_SECONDS,
             say: Callable[[str], None] = print, connect=None) -> Iterator[GradeResult]:
    """Grade ``jobs`` on the cluster at ``scheduler``: one result per job, or
    :class:`SchedulerLost` / :class:`NoWorkers`. ``connect``: the client (made here by default)."""
    from distributed import wait as dask_wait

    client = connect() if connect else _connect(scheduler, security)
    with client, _dask_logs_quiet():
        rotation = Rotation(client, course_spec, allow_fence, wait_seconds, say)
        if not jobs:
            return
        if allow_fence:
            say("--allow-fence: a worker behind the fence grades too (its rows say fence): its "
                "kernels have no network and a uid of their own, but read every file other users "
                "may read; close the course's files to other users there (docs/GRADING.md)")
        try:
            rotation.ready(scheduler)
        except NoWorkers:
            raise
        except Exception as error:
            if _client_lost(client):
                raise SchedulerLost(_lost_line(scheduler, len(jobs))) from None
            raise error

        from autograder.batch.deadline import grade_within_time

        def submit(path, student):
            return client.submit(
                grade_on_worker, grade_within_time, (path, student, settings), course_spec,
                allow_fence,
                workers=sorted(rotation.fit), allow_other_workers=False, pure=False, retries=1)

        pending = {submit(path, student): (path, student) for path, student in jobs}
        while pending:
            try:
                dask_wait(list(pending), timeout=1.0, return_when="FIRST_COMPLETED")
            except Exception as error:  # none finished in time: TimeoutError and its kin
                if "Timeout" not in type(error).__name__ and not _client_lost(client):
                    raise
            if _client_lost(client) and not any(f.status == "finished" for f in pending):
                raise SchedulerLost(_lost_line(scheduler, len(pending)))
            for future in [f for f in pending if f.done()]:
                path, student = pending.pop(future)
                try:
                    yield future.result()
                    continue
                except WorkerUnfit as unfit:
                    rotation.take_out(unfit.worker, unfit.reason)
                    if not rotation.fit:
                        rotation.ready(scheduler)
                    pending[submit(path, student)] = (path, student)
                    continue
                except Exception as error:
                    if _client_lost(client) or type(error).__name__ in ("CancelledError",
                                                                         "FutureCancelledError"):
                        raise SchedulerLost(_lost_line(scheduler, len(pending) + 1)) from None
                    # a worker lost twice (KilledWorker): this file's row
                    yield error_result(
                        path, student, WORKER_LOST,
                        f"the Dask worker grading this file failed ({type(error).__name__})")


@contextlib.contextmanager
def _dask_logs_quiet():
    """Dask's own log (a lost scheduler: tracebacks of every reconnection) stays out of the
    batch's output, which says what happened in its own one line."""
    import logging

    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _lost_line(scheduler: str, left: int) -> str:
    return (f"the Dask scheduler at {scheduler} was lost with {left} file(s) not graded: results "
            "recorded so far are kept; start the scheduler and its workers again and run the same "
            "command to grade the rest")


def _connect(scheduler: str, security):
    from distributed import Client

    from autograder.batch.dask_options import SchedulerUnreachable, dask_security

    security = dask_security(scheduler, security=security)  # TLS with a certificate, or refused
    try:
        return Client(scheduler, security=security, timeout=30)
    except (OSError, TimeoutError) as error:
        raise SchedulerUnreachable(
            f"the Dask scheduler at {scheduler} could not be reached ({error}): start it, or "
            "check --scheduler and the TLS options; results recorded so far are kept"
        ) from None

"""The grading process: takes jobs from the database queue, grades them, writes their results.

It is a process of its own, started (and restarted) by the web process, sharing nothing with it but
the database. Jobs are graded by local grading processes (``autograder.batch.workers``: a memory cap
of their own, a watchdog that kills one that dies, stops or hangs, with every process it started) or
by a Dask cluster (``--scheduler``). A job whose grading process is lost goes back to the queue
once (``queue.lost``); the claim counts are in the database, so a restart does not reset them.

The course files are checked (``guard.CourseGuard``) before each job starts and before each result
is kept: after a course fix, this process gives its jobs back uncounted and exits, and the web
process starts a fresh one, which grades with the fixed course (then re-grade the lab from the
dashboard).
"""
from __future__ import annotations

import collections
import logging
import os
import signal
import sys
import time
import uuid
from dataclasses import dataclass, replace
from multiprocessing.connection import wait
from pathlib import Path
from typing import cast

import psutil
from sqlalchemy.engine import make_url
from sqlalchemy.exc import InterfaceError, OperationalError

from autograder.kernel import tempdirs
from autograder.batch.deadline import hard_seconds, out_of_time_row
from autograder.grading.result import GRADER_ERROR, GradeResult
from autograder.service import queue
from autograder.service.database import Database
from autograder.service.worker_job import NotebookJob, grade_notebook, grade_notebook_within_time
from autograder.batch.workers import Job, Outcome, WorkerPool, drain
from autograder.service.settings import ServiceSettings

log = logging.getLogger("autograder.service.grader")
COURSE_CHANGED_EXIT = 3  # the web process restarts a grading process that exits so, at once
HEARTBEAT_SECONDS = 2.0
ORPHANS_SECONDS = 10.0
# the database unreachable (restarted, the network): the grading process waits for it; its jobs
# go on
DATABASE_DOWN = (OperationalError, InterfaceError)


@dataclass
class Event:
    job: queue.Job
    result: GradeResult | None = None  # done
    lost: str | None = None  # why its grading process was lost
    back: bool = False  # its worker cannot grade: back to the queue, uncounted


# A job graded this long is waiting, sleeping or looping (an honest grading of the course's labs
# takes seconds): it keeps its process and its time limit, but no longer holds a slot, so that a
# few students' sleeping notebooks hold up no classmate (at most OVERCOMMIT times the slots beside
# them).
# (ServiceSettings.long_job_seconds, 60 s by default). So does one that sleeps or waits: its
# grading process and kernel used under IDLE_SHARE of a core over IDLE_SECONDS (an honest grading
# computes all along).
OVERCOMMIT = 3
# Judged over a sliding window, looked at about once a second: a sleeper leaves its slot about
# IDLE_SECONDS after its kernel has started (a window that began at its start would hold the
# start-up's CPU and make it wait a second window: at a deadline, ten attackers' sleepers then
# held the four slots for most of the first minute). Over 2 s, not 5: with 10 attackers beside a
# class of 250 at a deadline, the honest p95 was 15.3 s with 5, 10.7 s with 2 (their sleepers
# each hold a slot that long, one after another); an honest grading computes all along.
IDLE_SECONDS, IDLE_SHARE, IDLE_LOOK = 2.0, 0.02, 1.0


class IdleWatch:
    """Which jobs sleep or wait: their grading process and its children (the kernel) used under
    IDLE_SHARE of a core over the last IDLE_SECONDS (or a little more: from the newest look at least
    that old), looked at about once per IDLE_LOOK.

    >>> watch = IdleWatch()
    >>> [watch.idle(1, os.getpid(), moment) for moment in (0.0, 1.0)]  # too soon to say
    [False, False]
    """

    def __init__(self) -> None:
        # job -> its looks, oldest first: (when, its CPU seconds then)
        self.looks: dict[int, collections.deque[tuple[float, float]]] = {}

    def idle(self, job_id: int, pid: int | None, moment: float) -> bool:
        looks = self.looks.setdefault(job_id, collections.deque())
        if pid is not None and (not looks or moment - looks[-1][0] >= IDLE_LOOK):
            try:
                process = psutil.Process(pid)
                used = sum(sum(p.cpu_times()[:2])
                           for p in [process, *process.children(recursive=True)])
            except psutil.Error:
                return False
            looks.append((moment, used))
        while len(looks) > 1 and moment - looks[1][0] >= IDLE_SECONDS:
            looks.popleft()  # the window's start: the newest look at least IDLE_SECONDS old
        if len(looks) < 2 or moment - looks[0][0] < IDLE_SECONDS:
            return False
        (then, first), (_, last) = looks[0], looks[-1]
        return last - first < IDLE_SHARE * (moment - then)


class LocalRunner:
    """Local grading processes, each grading one job at a time
    (``autograder.batch.workers.WorkerPool``: its processes, watchdog and clean-up, fed one job
    whenever a process is free)."""

    kind = "local"

    def __init__(self, size: int, settings, memory_bytes: int, long_seconds: float = 60.0):
        # the same outside deadline as every other grader
        # (batch/deadline.py): --notebook-timeout and a grace
        self.settings = settings
        self.pool = WorkerPool(
            grade_notebook,
            size,
            on_lost=None,
            budget=hard_seconds(settings),
            memory_bytes=memory_bytes,
        )
        self.size = self.pool.size
        self.jobs: dict[int, queue.Job] = {}
        self.started: dict[int, float] = {}
        self.long_seconds = long_seconds
        self.pids: dict[int, int] = {}
        self.idle = IdleWatch()

    def free(self) -> int:
        """Slots free now: ``size``, less the jobs graded for less than ``long_seconds`` and not
        idle, with at most :data:`OVERCOMMIT` times ``size`` long or idle ones beside them."""
        moment = time.monotonic()
        long = sum(1 for job_id, started in self.started.items()
                   if moment - started >= self.long_seconds or self._idle(job_id, moment))
        self.pool.size = self.size + min(long, self.size * OVERCOMMIT)
        return self.pool.free()

    def _idle(self, job_id: int, moment: float) -> bool:
        return self.idle.idle(job_id, self.pids.get(job_id), moment)

    def start(self, job: queue.Job, settings) -> int | None:
        args = NotebookJob(job.notebook, job.file_name, job.student_id, settings)
        pid = self.pool.submit(Job(job.id, args, attempt=job.claims, name=job.file_name))
        self.jobs[job.id] = job
        self.started[job.id] = time.monotonic()
        self.pids[job.id] = pid
        return pid

    def wait(self, timeout: float, wake=None) -> list[Event]:
        events = []
        for event in self.pool.wait(timeout, wake):
            job = self.jobs.pop(event.job.id)
            for known in (self.started, self.pids, self.idle.looks):
                known.pop(event.job.id, None)
            if event.outcome is Outcome.DONE:
                events.append(Event(job, result=cast(GradeResult, event.result)))
            elif event.outcome is Outcome.FAILED:
                events.append(Event(job, result=GradeResult(
                    job.student_id,
                    job.file_name,
                    status=GRADER_ERROR,
                    lab=job.lab,
                    message=f"this notebook could not be graded ({event.reason[:300]})",
                )))
            elif event.outcome is Outcome.TIMED_OUT:
                # its time is spent: an out_of_time result, never graded again
                row = out_of_time_row(
                    job.file_name, job.student_id, self.settings, self.pool.budget
                )
                events.append(Event(job, result=replace(row, lab=job.lab)))
            else:
                events.append(Event(job, lost=event.reason))
        return events

    def close(self) -> list[queue.Job]:
        """End every grading process; returns the jobs they were grading."""
        self.pool.close()
        jobs = list(self.jobs.values())
        self.jobs, self.started, self.pids = {}, {}, {}
        self.idle = IdleWatch()
        return jobs


ADOPTABLE = "bpe-submission-"  # the published name of a job's Dask task: its id follows


class DaskRunner:
    """A Dask cluster over TLS: one task per job, on the workers that pass the check
    (``dask_grading.Rotation``: the course imports, the boundary, or ``--allow-fence``); its slots
    are theirs, counted again every :data:`CHECK_SECONDS` (0: none, and /health says 503)."""

    kind = "dask"
    CHECK_SECONDS = 10.0

    def __init__(self, scheduler: str, security, size: int, allow_fence: bool = False):
        from distributed import Client

        from autograder.course import current
        from autograder.batch.dask_grading import Rotation

        from autograder.batch.dask_options import dask_security

        security = dask_security(scheduler, security=security)  # TLS with a certificate only
        self.client = Client(scheduler, security=security, timeout=30)
        self.course_spec, self.allow_fence = current().spec, allow_fence
        self.rotation = Rotation(self.client, self.course_spec, allow_fence, 30.0,
                                 say=lambda line: log.warning("%s", line))
        self.checked = float("-inf")
        self.futures: dict = {}
        self.size = 0
        self.check()

    def check(self) -> int:
        """Ask the workers again (new ones join, a checked one keeps its answer); the slots."""
        now = time.monotonic()
        if now - self.checked >= self.CHECK_SECONDS:
            self.checked = now
            told = dict(self.rotation.out or {})
            self.rotation.out = {a: r for a, r in told.items() if "did not answer" not in r}
            try:
                self.rotation._ask()
            except Exception as error:  # the scheduler is away: no slots until it is back
                log.warning("the Dask scheduler could not be asked for workers (%s)",
                            type(error).__name__)
                self.rotation.fit = frozenset()
            for address, reason in (self.rotation.out or {}).items():
                if address not in told:
                    log.warning("Dask worker %s takes no jobs: %s", address, reason)
            nthreads = self.client.nthreads() if self.rotation.fit else {}
            self.size = sum(nthreads.get(address, 1) for address in self.rotation.fit)
        return self.size

    def free(self) -> int:
        return self.check() - len(self.futures)

    def start(self, job: queue.Job, settings) -> int | None:
        from autograder.batch.dask_grading import grade_on_worker

        future = self.client.submit(
            grade_on_worker,
            grade_notebook_within_time,
            (job.notebook, job.file_name, job.student_id, settings),
            self.course_spec,
            self.allow_fence,
            workers=sorted(self.rotation.fit),
            allow_other_workers=False,
            pure=False,
            retries=0,
            key=f"submission-{job.id}-claim-{job.claims}-{uuid.uuid4().hex[:8]}",
        )
        # published: the scheduler keeps the task (and its result) if this process dies, for the
        # next grading process to adopt instead of grading the job again
        self.client.publish_dataset(future, name=f"{ADOPTABLE}{job.id}", override=True)
        self.futures[future] = job
        return None

    def adopt(self, db: Database, grader_id: str) -> list[queue.Job]:
        """The tasks a grading process before this one left on the cluster (the service restarted):
        each whose job that process still held is adopted (its result will be this process's, and
        it holds a slot now); any other is cancelled. Before any slot is counted free."""
        adopted = []
        for name in self.client.list_datasets():
            if not str(name).startswith(ADOPTABLE):
                continue
            future = self.client.get_dataset(name)
            job = queue.adopt(db, grader_id, int(str(name)[len(ADOPTABLE):]))
            if job is None:  # finished, or another live grader's: not ours to keep
                future.cancel()
                self._forget(job_id=int(str(name)[len(ADOPTABLE):]))
                continue
            self.futures[future] = job
            adopted.append(job)
            log.info("submission %s: its Dask task, left by a grading process that ended, is "
                     "adopted (not graded again)", job.id)
        return adopted

    def _forget(self, job_id: int) -> None:
        try:
            self.client.unpublish_dataset(f"{ADOPTABLE}{job_id}")
        except Exception:  # gone already (the scheduler restarted, or never published)
            pass

    def wait(self, timeout: float, wake=None) -> list[Event]:
        from distributed import wait as dask_wait

        from autograder.batch.dask_grading import WorkerUnfit

        if not self.futures:
            if wake is not None and wait([wake], timeout=timeout):
                drain(wake)
            return []
        if wake is not None and wait([wake], timeout=0):
            drain(wake)
        try:
            dask_wait(list(self.futures), timeout=timeout, return_when="FIRST_COMPLETED")
        # none finished in time (asyncio's TimeoutError is the built-in one since 3.11)
        except TimeoutError:
            pass
        except Exception as error:
            if "Timeout" not in type(error).__name__:
                raise
        events = []
        for future in [future for future in self.futures if future.done()]:
            job = self.futures.pop(future)
            self._forget(job.id)
            try:
                events.append(Event(job, result=future.result()))
            except WorkerUnfit as unfit:  # out of rotation; the job goes back, uncounted
                self.rotation.take_out(unfit.worker, unfit.reason)
                self.size = max(0, self.size - 1)
                events.append(Event(job, back=True))
            except Exception as error:  # a worker lost (KilledWorker), the cluster failing
                events.append(Event(job, lost=f"the Dask worker failed ({type(error).__name__})"))
        return events

    def close(self) -> list[queue.Job]:
        jobs = list(self.futures.values())
        for future, job in self.futures.items():
            future.cancel()
            self._forget(job.id)
        self.futures = {}
        self.client.close()
        return jobs


def _record(db: Database, grader_id: str, event: Event) -> None:
    """Write one event's outcome: the job's result, or its loss."""
    if event.result is not None:
        kept = queue.finish(db, grader_id, event.job.id, event.result)
        log.info(
            "submission %s: %s in %.1f s%s",
            event.job.id,
            event.result.status,
            event.result.seconds,
            "" if kept else " (not kept: no longer claimed by this process)",
        )
    elif event.back:  # its worker cannot grade: back to the queue, uncounted
        queue.give_back(db, grader_id, event.job.id)
    elif event.lost is not None:  # (an event is a result or a loss)
        outcome = queue.lost(db, grader_id, event.job, event.lost)
        log.warning(
            "submission %s: grading process lost (%s): %s", event.job.id, event.lost, outcome
        )


def run(settings: ServiceSettings, wake=None) -> int:
    """Grade jobs until told to stop (SIGTERM, SIGINT) or the course changes. Returns the exit
    code."""
    from autograder.batch.guard import CourseChanged, CourseGuard, course_files

    db = Database(settings.db_url, pooled=False)  # this process forks grading workers
    grader_id = uuid.uuid4().hex
    grading = settings.grading
    # a kernel never reads the database, even behind the weaker fence
    database = make_url(db.url).database  # None for SQLite in memory: no file to hide
    if db.url.startswith("sqlite") and database:
        path = Path(database).resolve()
        grading = replace(grading, denied=tuple(grading.denied) + tuple(
            Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")))
    runner: DaskRunner | LocalRunner
    cluster = None
    if settings.local_cluster:
        from autograder.batch.dask_tls import LocalTLSCluster

        cluster = LocalTLSCluster(settings.workers).start()
        runner = DaskRunner(cluster.address, cluster.security, settings.workers,
                            settings.allow_fence)
    elif settings.scheduler:
        runner = DaskRunner(settings.scheduler, settings.dask_security, settings.workers,
                            settings.allow_fence)
    else:
        runner = LocalRunner(settings.workers, grading, memory_bytes=grading.worker_memory_bytes,
                             long_seconds=settings.long_job_seconds)
        unfit = local_unfit(settings.allow_fence)
        if unfit:  # takes no jobs: /health says 503
            log.error("this machine takes no jobs: %s", unfit)
            runner.size = 0
    queue.register(db, grader_id, runner.kind, runner.size)
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))
    signal.signal(signal.SIGINT, lambda signum, _frame: stopping.append(signum))
    code, held = 0, []  # held: jobs claimed and not yet handed to a grading process or finished
    unsaved: list[Event] = []  # results and losses the database has not taken yet (it is down)
    try:
        guard = CourseGuard(course_files())
        tempdirs.sweep()  # what a killed server left: its kernels' folders and cgroups
        tempdirs.sweep_cgroups()
        if isinstance(runner, DaskRunner):  # before orphans are counted, and slots free
            runner.adopt(db, grader_id)
        for job_id, outcome in queue.recover_orphans(db):
            log.info("submission %s: its grading process is gone: %s", job_id, outcome)
        queue.heartbeat(db, grader_id, ready=True)
        log.info("grading process %s ready: %d %s slot(s)", grader_id[:8], runner.size, runner.kind)
        beat = orphans = time.monotonic()
        outage: float | None = None  # since when the database has been unreachable
        while not stopping:
            # the jobs in flight go on grading whatever the database does
            unsaved += runner.wait(settings.poll_seconds if outage is None else 1.0, wake)
            try:
                held = [event.job for event in unsaved if event.result is not None]
                if held:
                    guard.check()  # before anything of these results is kept
                while unsaved:
                    _record(db, grader_id, unsaved[0])
                    unsaved.pop(0)
                held = []
                moment = time.monotonic()
                if moment - beat >= HEARTBEAT_SECONDS or outage is not None:
                    queue.heartbeat(db, grader_id, workers=runner.size)
                    beat = moment
                if moment - orphans >= ORPHANS_SECONDS:
                    queue.recover_orphans(db)
                    orphans = moment
                while runner.free() > 0 and not stopping:
                    job = queue.claim(db, grader_id)
                    if job is None:
                        break
                    held = [job]
                    # the course as it was at the start, or this process gives way to a fresh one
                    guard.check()
                    pid = runner.start(job, grading)
                    held = []
                    queue.set_worker(db, job.id, pid)
                    log.info("submission %s: grading (claim %d)", job.id, job.claims)
                if outage is not None:
                    log.warning("the database is back after %.0f s", time.monotonic() - outage)
                    outage = None
            except DATABASE_DOWN as error:
                held = []  # a claim that failed was not made; one made is graded (its worker runs)
                if outage is None:
                    outage = time.monotonic()
                    log.warning("the database is unreachable (%s): the jobs in flight go on, "
                                "their results wait", str(error).splitlines()[0][:200])
        log.info("grading process %s stopping", grader_id[:8])
    except CourseChanged as changed:
        log.warning("%s: a fresh grading process takes over", str(changed)[:300])
        code = COURSE_CHANGED_EXIT
    finally:
        try:
            for job in held + runner.close():
                queue.give_back(db, grader_id, job.id)
            queue.stopped(db, grader_id)
        except DATABASE_DOWN:  # its jobs are orphans: the next grading process gives them back
            log.warning("the database is unreachable: this process's jobs wait for the next one")
        db.close()
        if cluster is not None:
            cluster.stop()
    return code


def local_unfit(allow_fence: bool) -> str | None:
    """Why this machine's kernels may not grade the service's jobs (root, or the fence without
    ``--allow-fence``), or None."""
    from autograder.kernel.boundary import full_boundary, refused
    from autograder.kernel.probe import isolation_status

    status = isolation_status()
    if refused(status):
        return f"its kernels would run as root ({status})"
    if not full_boundary(status) and not allow_fence:
        return f"its kernels get less than the boundary ({status}); serve --allow-fence grades here"
    return None


def main(settings: ServiceSettings, wake=None) -> None:
    """The grading process's body (started by the web process): dies with its parent."""
    if sys.platform.startswith("linux"):
        from autograder.kernel import isolation

        isolation.die_with_parent(signal.SIGKILL)
    if os.getppid() == 1:
        os._exit(0)
    # The web process runs with umask 077 (its files are owner-only); the kernels' folders this
    # process makes must stay reachable by the kernels' own uid, or the boundary falls back to the
    # fence. The database's -wal and -shm take the database file's mode whatever the umask.
    os.umask(0o022)
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s grader %(levelname)s %(message)s"
    )
    sys.exit(run(settings, wake))

"""``--notebook-timeout`` held from outside the work: a file's grading runs in a grading process
that a watchdog ends when the file's time is up, however its grading hangs (a single C call that
never returns included: no signal or timer inside the process could cut it short).

Everything done for one file counts: intake, the kernels, decoding the kernel's replies, the hidden
tests' comparisons, redaction and the result. The watchdog allows the file ``--notebook-timeout``
plus a grace (:func:`hard_seconds`: what ends the last request, 12 s with the default limits),
then ends the grading process with every process it started, and the file gets an ``out_of_time``
row. Used by every grader: local workers (``run.py``), ``--workers 0``, Gradescope's runner and
each Dask worker (:func:`grade_within_time`).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, NamedTuple

from autograder.grading.grade import error_result, grade_file
from autograder.grading.settings import Settings
from autograder.grading.result import OUT_OF_TIME, WORKER_LOST, GradeResult
from autograder.batch.workers import Job, run_watched

GRACE_SECONDS = 10.0


class FileJob(NamedTuple):
    """What a grading process grades: ``grade_file``'s arguments, named."""

    path: Path
    student: str
    settings: Settings


def hard_seconds(settings: Settings) -> float:
    """How long the watchdog lets one file's grading process work before it ends it: the file's
    time, then what an honest grading may still need to end its last request (an interrupt's
    grace, a drain of the output, a shutdown), at least :data:`GRACE_SECONDS`."""
    limits = settings.limits
    return limits.notebook_seconds + max(
        GRACE_SECONDS, limits.interrupt_grace_seconds + limits.drain_seconds + 5
    )


def out_of_time_row(
    file: str | Path, student: str, settings: Settings, seconds: float
) -> GradeResult:
    """The row of a file whose grading process was still at work after ``seconds``: ended."""
    row = error_result(
        Path(file),
        student,
        OUT_OF_TIME,
        f"grading this file did not end within its time limit (--notebook-timeout "
        f"{settings.limits.notebook_seconds:g} s, ended at {seconds:g} s): nothing of it is graded",
    )
    return replace(row, seconds=round(seconds, 3))


def lost_row(file: str | Path, student: str, reason: str) -> GradeResult:
    """The row of a file whose grading process was lost (twice, for a batch)."""
    return error_result(
        Path(file), student, WORKER_LOST, f"grading this file stopped its grader: {reason}"
    )


def file_out_of_time(job: Job[FileJob], seconds: float) -> GradeResult:
    """A :class:`~autograder.batch.workers.WorkerPool`'s ``on_timeout`` for :class:`FileJob` s."""
    return out_of_time_row(job.args.path, job.args.student, job.args.settings, seconds)


def file_lost(job: Job[FileJob], reason: str) -> GradeResult:
    """A :class:`~autograder.batch.workers.WorkerPool`'s ``on_lost`` for :class:`FileJob` s."""
    return lost_row(job.args.path, job.args.student, reason)


def run_within_time(
    function: Callable[..., GradeResult],
    job: Job,
    file: str | Path,
    student: str,
    settings: Settings,
) -> GradeResult:
    """``function(*job.args)`` (the grading of ``file``) in a grading process of this thread's own
    (kept from file to file), ended if the file's time is up: the one deadline wrapper, what a Dask
    worker and Gradescope's runner run."""
    from autograder.kernel.session import isolation_status

    # probed here once, before the grading process is forked: it inherits the answer
    isolation_status()
    return run_watched(
        function,
        job,
        hard_seconds(settings),
        on_lost=lambda _job, reason: lost_row(file, student, reason),
        on_timeout=lambda _job, seconds: out_of_time_row(file, student, settings, seconds),
        memory_bytes=settings.worker_memory_bytes,
    )


def grade_within_time(path: Path, student_id: str, settings: Settings = Settings()) -> GradeResult:
    """``grade_file`` within the file's time (:func:`run_within_time`)."""
    job = Job(0, FileJob(Path(path), student_id, settings), name=Path(path).name)
    return run_within_time(grade_file, job, path, student_id, settings)

"""``--notebook-timeout`` held from outside the work: a file's grading runs in a grading process
that a watchdog ends when the file's time is up, however its grading hangs (a single C call that
never returns included: no signal or timer inside the process could cut it short).

Everything done for one file counts: intake, the kernels, decoding the kernel's replies, the hidden
tests' comparisons, redaction and the result. The watchdog allows the file ``--notebook-timeout``
plus a grace (:func:`hard_seconds`: what ends the last request, 12 s with the default limits),
then ends the grading process with every process it started, and the file gets an ``out_of_time``
row. Used by every grader: local workers (``batch.py``), ``--workers 0``, Gradescope's runner and
each Dask worker (:func:`grade_within_time`).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from autograder.grade import Settings, error_result, grade_file
from autograder.result import OUT_OF_TIME, WORKER_LOST, GradeResult

GRACE_SECONDS = 10.0


def hard_seconds(settings: Settings) -> float:
    """How long the watchdog lets one file's grading process work before it ends it: the file's
    time, then what an honest grading may still need to end its last request (an interrupt's
    grace, a drain of the output, a shutdown), at least :data:`GRACE_SECONDS`."""
    limits = settings.limits
    return limits.notebook_seconds + max(
        GRACE_SECONDS, limits.interrupt_grace_seconds + limits.drain_seconds + 5
    )


def out_of_time_row(args: tuple, seconds: float) -> GradeResult:
    path, student = args[0], args[1]
    settings: Settings = args[2]
    row = error_result(
        Path(path),
        student,
        OUT_OF_TIME,
        f"grading this file did not end within its time limit (--notebook-timeout "
        f"{settings.limits.notebook_seconds:g} s, ended at {seconds:g} s): nothing of it is graded",
    )
    return replace(row, seconds=round(seconds, 3))


def lost_row(args: tuple, reason: str) -> GradeResult:
    path, student = args[0], args[1]
    return error_result(
        Path(path), student, WORKER_LOST, f"grading this file stopped its grader: {reason}"
    )


def grade_within_time(path: Path, student_id: str, settings: Settings = Settings()) -> GradeResult:
    """``grade_file`` in a grading process of this thread's own (kept from file to file), ended if
    the file's time is up: what a Dask worker and Gradescope's runner run."""
    from autograder.kernel import isolation_status
    from autograder.workers import run_watched

    # probed here once, before the grading process is forked: it inherits the answer
    isolation_status()
    return run_watched(
        grade_file,
        (path, student_id, settings),
        hard_seconds(settings),
        on_lost=lost_row,
        on_timeout=out_of_time_row,
        memory_bytes=settings.worker_memory_bytes,
    )

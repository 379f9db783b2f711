"""What a grading worker runs for one submission: the engine's ``grade_file``, unchanged, on the
notebook's bytes written to a private temporary folder (a Dask worker on another machine has no
other copy of it). The result names the file as the student uploaded it."""
from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from autograder.grade import Settings, grade_file
from autograder.result import GradeResult


def grade_notebook(
    notebook: bytes, file_name: str, student_id: str, settings: Settings
) -> GradeResult:
    """Grade one submission; like ``grade_file``, never raises for a bad notebook."""
    with tempfile.TemporaryDirectory(prefix="autograder-service-") as folder:
        path = Path(folder) / "submission.ipynb"
        path.write_bytes(notebook)
        result = grade_file(
            path,
            student_id,
            replace(settings, denied=tuple(settings.denied) + (Path(folder).resolve(),)),
        )
    return replace(result, file=file_name)


def grade_notebook_within_time(
    notebook: bytes, file_name: str, student_id: str, settings: Settings
) -> GradeResult:
    """``grade_notebook`` in a grading process of this thread's own, ended from outside when the
    file's time is up (``deadline.py``): what a Dask worker runs, so that a hung grading never holds
    it."""
    from autograder.kernel import isolation_status
    from autograder.deadline import hard_seconds, lost_row, out_of_time_row
    from autograder.workers import run_watched

    # probed here once, before the grading process is forked: it inherits the answer
    isolation_status()
    result = run_watched(
        grade_notebook,
        (notebook, file_name, student_id, settings),
        hard_seconds(settings),
        on_lost=lambda args, reason: lost_row((file_name, student_id), reason),
        on_timeout=lambda args, seconds: out_of_time_row(
            (file_name, student_id, settings), seconds
        ),
        memory_bytes=settings.worker_memory_bytes,
    )
    return replace(result, file=file_name)

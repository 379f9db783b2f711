"""What a grading worker runs for one submission: the engine's ``grade_file``, unchanged, on the
notebook's bytes written to a private temporary folder (a Dask worker on another machine has no
other copy of it). The result names the file as the student uploaded it."""
from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from autograder.batch.deadline import run_within_time
from autograder.grading.grade import grade_file
from autograder.grading.settings import Settings
from autograder.grading.result import GradeResult
from autograder.batch.workers import Job


class NotebookJob(NamedTuple):
    """A submission to grade: ``grade_notebook``'s arguments, named."""

    notebook: bytes
    file_name: str
    student_id: str
    settings: Settings


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
    file's time is up (``deadline.run_within_time``): what a Dask worker runs, so that a hung
    grading never holds it."""
    job = Job(0, NotebookJob(notebook, file_name, student_id, settings), name=file_name)
    result = run_within_time(grade_notebook, job, file_name, student_id, settings)
    return replace(result, file=file_name)

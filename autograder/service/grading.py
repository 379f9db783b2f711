"""What a grading worker runs for one submission: the engine's ``grade_file``, unchanged, on the
notebook's bytes written to a private temporary folder (a Dask worker on another machine has no
other copy of it). The result names the file as the student uploaded it."""
from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from autograder.grade import Settings, grade_file
from autograder.result import GradeResult


def grade_notebook(notebook: bytes, file_name: str, student_id: str, settings: Settings) -> GradeResult:
    """Grade one submission; like ``grade_file``, never raises for a bad notebook."""
    with tempfile.TemporaryDirectory(prefix="autograder-service-") as folder:
        path = Path(folder) / "submission.ipynb"
        path.write_bytes(notebook)
        result = grade_file(path, student_id, replace(settings, denied=tuple(settings.denied) + (Path(folder).resolve(),)))
    return replace(result, file=file_name)

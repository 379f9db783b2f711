"""Grade one submission: intake -> repair -> execute -> check -> a result made of plain data.

``grade_file`` is what every worker runs (a local process, a Dask worker): it takes a path and
settings, returns a JSON-able dict, and never raises for a bad notebook.
"""
from __future__ import annotations

import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autograder import REPO_ROOT
from autograder.check import run_part
from autograder.intake import read_submission
from autograder.kernel import KernelSession, Limits
from autograder.labs import get_lab
from autograder.repair import repair

DEFAULT_DATA_DIR = REPO_ROOT / "data" / "standins"


@dataclass(frozen=True)
class Settings:
    limits: Limits = field(default_factory=Limits)
    data_dir: Path = DEFAULT_DATA_DIR
    part_seconds: float = 60.0
    denied: tuple[Path, ...] = ()


def grade_file(path: Path, student_id: str, settings: Settings = Settings(), attempts: int = 2) -> dict:
    """Grade one file; a grader failure (say, a kernel that would not start on an overloaded
    machine) is retried once before it becomes a ``grader_error`` row."""
    for _ in range(attempts):
        result = _grade_file_once(path, student_id, settings)
        if result["status"] != "grader_error":
            break
    return result


def _grade_file_once(path: Path, student_id: str, settings: Settings) -> dict:
    started = time.monotonic()
    sub = read_submission(Path(path), student_id)
    result = {"student_id": student_id, "file": str(path), "sha256": sub.sha256, "lab": sub.lab_id,
              "status": sub.status, "message": sub.message, "score": None, "max_score": None,
              "parts": {}, "integrity": [{"event": "converted", "cell": "-", "detail": n} for n in sub.notes],
              "cells": [], "seconds": 0.0}
    if sub.status != "ok":
        result["seconds"] = round(time.monotonic() - started, 3)
        return result
    lab = get_lab(sub.lab_id)
    result["max_score"] = lab.max_score
    try:
        repaired = repair(sub.notebook, lab)
        result["integrity"] += repaired.integrity
        with tempfile.TemporaryDirectory(prefix="bpe-grade-") as workdir, \
                KernelSession(Path(workdir) / "work", settings.limits, Path(settings.data_dir).resolve(),
                              settings.denied) as session:
            for step in repaired.program:
                run = session.run_cell(step.source)
                if run.status != "ok":
                    result["cells"].append({"cell": step.cell_id, "kind": step.kind, "status": run.status, "error": run.error})
            for part in lab.parts:
                try:
                    visible = session.run_cell(repaired.checks.get(part.part_id, ""), replay=False, capture=True)
                    entry = asdict(run_part(session, part, settings.part_seconds))
                    entry["visible_check"] = visible.stdout.strip() or visible.error
                except Exception as error:  # the kernel could not be brought back: this part only
                    entry = {"part_id": part.part_id, "score": 0, "max_score": part.points, "visible_check": "",
                             "message": f"this part could not be graded ({type(error).__name__}: {error})"}
                result["parts"][part.part_id] = entry
            result["restarts"] = session.restarts
        result["score"] = sum(p["score"] for p in result["parts"].values())
        result["status"] = "graded"
    except Exception as error:  # a grader bug must cost one row, not the batch
        result["status"], result["message"] = "grader_error", f"{type(error).__name__}: {error}"
        result["traceback"] = traceback.format_exc()
    result["seconds"] = round(time.monotonic() - started, 3)
    return result

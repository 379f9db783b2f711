"""Grade one submission: intake -> repair -> execute -> check -> a result made of plain data.

``grade_file`` is what every worker runs (a local process, a Dask worker): it takes a path and
settings, returns a JSON-able dict, and never raises for a bad notebook.
"""
from __future__ import annotations

import functools
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autograder import REPO_ROOT
from autograder.check import run_part
from autograder.intake import read_submission
from autograder.kernel import KernelSession, Limits
from autograder.labs import get_lab, release_cells
from autograder.repair import repair

DEFAULT_DATA_DIR = REPO_ROOT / "data" / "standins"


@dataclass(frozen=True)
class Settings:
    limits: Limits = field(default_factory=Limits)
    data_dir: Path = DEFAULT_DATA_DIR
    part_seconds: float = 60.0
    denied: tuple[Path, ...] = ()


def _grade_part(session: KernelSession, part, check_source: str, settings: Settings) -> dict:
    """The part's visible check (its output is shown in the feedback), then its hidden tests."""
    try:
        visible = session.run_cell(check_source, replay=False, capture=True)
        entry = asdict(run_part(session, part, settings.part_seconds))
        entry["visible_check"] = visible.stdout.strip() or visible.error
    except Exception as error:  # the kernel could not be brought back: this part only
        entry = {"part_id": part.part_id, "score": 0, "max_score": part.points, "visible_check": "",
                 "message": f"this part could not be graded ({type(error).__name__}: {error})"}
    return entry


@functools.lru_cache(maxsize=None)
def public_text(lab_id: str) -> str:
    """Everything a student can read in the released notebook."""
    return "\n".join(cell.source for cell in release_cells(lab_id))


class Redactor:
    """Removes from text shown to a student every hidden-test input the grader sent into the kernel.

    Student code sees those inputs and could print them, put them in an exception message, or
    remember them and print them in a later check; the feedback must not carry them. A fragment is
    any string argument (or nested string), or the repr of an argument, that the released notebook
    does not already show: ``['abcab', '</w>']`` hides ``abcab`` but not the public ``</w>``.
    """

    def __init__(self, arguments: list, public: str, shortest: int = 3):
        fragments: set[str] = set()

        def walk(value):
            if isinstance(value, str):
                fragments.add(value)
            elif isinstance(value, (list, tuple, set, frozenset, dict)):
                fragments.add(repr(value))
                for item in (value.items() if isinstance(value, dict) else value):
                    walk(item)

        for argument in arguments:
            walk(argument)
        self.fragments = sorted((f for f in fragments if len(f) >= shortest and f not in public), key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for fragment in self.fragments:
            if fragment in text:
                text = text.replace(fragment, "[hidden input]")
        return text


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
            parts = {part.part_id: part for part in lab.parts}
            graded: dict[str, dict] = {}
            for step in repaired.program:
                if step.kind == "check":
                    if step.cell_id in parts and step.cell_id not in graded:
                        graded[step.cell_id] = _grade_part(session, parts[step.cell_id], step.source, settings)
                    continue
                run = session.run_cell(step.source)
                if run.status != "ok":
                    result["cells"].append({"cell": step.cell_id, "kind": step.kind, "status": run.status, "error": run.error})
            for part in lab.parts:  # a part whose test cell is not in the release (never, for a built lab)
                if part.part_id not in graded:
                    graded[part.part_id] = _grade_part(session, part, "", settings)
            result["parts"] = {part.part_id: graded[part.part_id] for part in lab.parts}
            redact = Redactor(session.sent_arguments, public_text(lab.lab_id))
            for entry in result["parts"].values():
                entry["message"], entry["visible_check"] = redact(entry["message"]), redact(entry["visible_check"])
            for cell in result["cells"]:
                cell["error"] = redact(cell["error"])
            result["restarts"] = session.restarts
        result["score"] = sum(p["score"] for p in result["parts"].values())
        result["status"] = "graded"
    except Exception as error:  # a grader bug must cost one row, not the batch
        result["status"], result["message"] = "grader_error", f"{type(error).__name__}: {error}"
        result["traceback"] = traceback.format_exc()
    result["seconds"] = round(time.monotonic() - started, 3)
    return result

"""nbgrader's own tools on the kit's gradebook: formgrader and ``nbgrader export``, started in OUT.

Formgrader does not read the gradebook alone: it lists an assignment only if the course folder
has a ``source/<assignment>/`` folder, counts a student's submission only if
``submitted/<student>/<assignment>/`` exists, and opens a submission as the notebook
``autograded/<student>/<assignment>/<notebook>.ipynb``, showing each graded cell's score from the
gradebook beside it. :func:`write_course` writes that layout into OUT:

* ``source/<lab>/``: empty. The course's sources stay in the course; formgrader's *Generate*
  finds nothing to release there, and nbgrader refuses to change an assignment that has submissions.
* ``submitted/<student>/<lab>/``: empty, so that formgrader's *autograde* button (nbgrader's own
  grader, which runs a notebook with no sandbox) has no notebook to run.
* ``autograded/<student>/<lab>/<lab>.ipynb``: the lab as the autograder graded it: the release's
  cells with the student's answers and the cells they added, and under each part's test cell the
  autograder's points, message and the notebook's own check. Nothing the student's notebook
  displayed is carried over: a TA's browser renders this page while signed in to Jupyter, and a
  student's HTML or JavaScript output would run there.
* ``nbgrader_config.py``: the course root (this folder) and gradebook for nbgrader's tools started
  here, and ``nbgrader export`` writing ``nbgrader_grades.csv``: its default file name,
  ``grades.csv``, is the kit's own, which it would overwrite.

A TA's changes in formgrader are read back by :mod:`autograder.reports.adjustments`.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.grading.intake import read_submission
from autograder.grading.names import terminal
from autograder.labs import get_lab, nbgrader_meta, release_cells
from autograder.grading.repair import repair
from autograder.grading.result import CellKind, GradeResult, Status

CONFIG_NAME = "nbgrader_config.py"
CONFIG_MARK = "# Written by the autograder"
NBGRADER_EXPORT_NAME = "nbgrader_grades.csv"  # where `nbgrader export`, started in OUT, writes
METADATA_KEY = "autograder"  # notebook metadata of an autograded notebook: what it was made from


@dataclass
class CourseLayout:
    """What :func:`write_course` did: notebooks written or already up to date, and why others are
    missing."""

    written: int = 0
    current: int = 0
    skipped: list[str] = field(default_factory=list)


def safe_folder_name(name: str) -> bool:
    """Can ``name`` be one folder of the layout, listed by formgrader? (``..``, a path or a hidden
    name could not, nor a name so long that its folder's files could not be named, nor one that
    formgrader's pages and nbgrader's tools would show garbled: a student id comes from a file name
    a student chose.)"""
    if (
        not name
        or name.startswith(".")
        or any(ch in name for ch in "/\\\0")
        or not name.isprintable()
    ):
        return False
    try:
        # no undecodable byte (a surrogate), room for the lab's names
        return len(name.encode("utf-8")) <= 100
    except UnicodeEncodeError:
        return False


def config_text(out_dir: Path, db_path: Path) -> str:
    """``nbgrader_config.py`` for OUT: nbgrader's tools started there use its course folder and
    gradebook."""
    lines = [
        f"{CONFIG_MARK} (autograder/reports/formgrader.py): nbgrader's tools started in "
        "this folder",
        "# (jupyter lab, nbgrader formgrader, nbgrader export) use its gradebook. Rewritten by "
        "every grade.",
        "import os",
        "",
        "c = get_config()  # noqa: F821 (given by the config loader)",
        "c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))",
    ]
    if Path(db_path).resolve() != (Path(out_dir) / "gradebook.db").resolve():
        lines.append(
            f"c.CourseDirectory.db_url = {('sqlite:///' + str(Path(db_path).resolve()))!r}"
        )
    lines += [
        "# nbgrader export would write grades.csv, the autograder's own grades: it writes this "
        "file instead.",
        f"c.CsvExportPlugin.to = os.path.join(c.CourseDirectory.root, {NBGRADER_EXPORT_NAME!r})",
        "",
    ]
    return "\n".join(lines)


def _part_text(result: GradeResult, part_id: str) -> str:
    part = result.parts[part_id]
    mark = "✅" if part.passed else "❌"
    lines = [f"{part_id}: {part.score:g} / {part.max_score:g} {mark} (autograder)"]
    if part.message:
        lines.append(part.message)
    if part.visible_check:
        lines += ["The notebook's own check on the example said:", part.visible_check]
    return "\n".join(lines) + "\n"


def _summary(result: GradeResult) -> str:
    # escapes Markdown and HTML: error texts come from the student's code
    from autograder.reports.report import markdown_text

    lines = [
        f"**Autograder**: {result.score:g} / {result.max_score:g} · "
        f"{markdown_text(Path(result.file).name)}",
        "",
    ]
    lines += [
        f"* {markdown_text(event.event)} {markdown_text(event.cell)}: {markdown_text(event.detail)}"
        for event in result.integrity
    ]
    lines += [
        f"* {markdown_text(cell.cell)} ({markdown_text(cell.kind)}): {markdown_text(cell.status)} "
        f"— {markdown_text(cell.error)}"
        for cell in result.cells
    ]
    return "\n".join(lines)


def _cell_key(cell, index: int) -> str:
    """The id repair gives a release cell (its nbgrader grade_id, else its cell id, else its
    place)."""
    return nbgrader_meta(cell).get("grade_id") or cell.get("id") or f"cell {index + 1}"


def _new_cell(cell_type: str, source: str, **more) -> nbformat.NotebookNode:
    """A cell as nbformat's ``new_*_cell`` makes it, without validating each one (a notebook's worth
    of cells took as long as the rest of the work; the notebook is checked against the schema in the
    tests)."""
    return nbformat.from_dict(
        {
            "id": nbformat.v4.nbbase.random_cell_id(),
            "cell_type": cell_type,
            "metadata": {},
            "source": source,
            **more,
        }
    )


def _code(source: str, outputs: list | None = None) -> nbformat.NotebookNode:
    return _new_cell("code", source, execution_count=None, outputs=outputs or [])


def autograded_notebook(result: GradeResult, notebook: nbformat.NotebookNode,
                        metadata: dict | None = None) -> nbformat.NotebookNode:
    """The notebook formgrader shows for ``result``, made from the submitted ``notebook``
    (``metadata``: the released notebook's, if the caller has it at hand)."""
    if result.lab is None:
        raise ValueError(f"{result.file}: a result with no lab has no autograded notebook")
    lab = get_lab(result.lab)
    release = release_cells(lab.lab_id)
    program = repair(notebook, lab).program
    answers = {step.cell_id: step.source for step in program if step.kind == CellKind.ANSWER}
    # release cell -> code cells the student added after it
    added: dict[str | None, list[str]] = defaultdict(list)
    last = None
    for step in program:
        if step.kind == CellKind.ADDED:
            added[last].append(step.source)
        else:
            last = step.cell_id

    cells = [_new_cell("markdown", _summary(result))] + [_code(source) for source in added[None]]
    for index, released in enumerate(release):
        key = _cell_key(released, index)
        cell = copy.deepcopy(released)
        cell.pop("attachments", None)
        meta = nbgrader_meta(released)
        if meta.get("solution"):
            cell.source = answers.get(key, "")
            if cell.cell_type == "markdown":  # a written answer: shown as text, never as HTML
                cell.source = cell.source.replace("<", "&lt;")
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if meta.get("grade") and key in result.parts:
                cell.outputs = [nbformat.from_dict({"output_type": "stream", "name": "stdout",
                                                    "text": _part_text(result, key)})]
        cells.append(cell)
        cells += [_code(source) for source in added[key]]
    metadata = copy.deepcopy(
        dict(metadata if metadata is not None else lab.release_notebook().metadata)
    )
    metadata[METADATA_KEY] = {"student": result.student_id, "lab": lab.lab_id, "file": result.file,
                              "made_from": _digest(result)}
    return nbformat.from_dict(
        {"nbformat": 4, "nbformat_minor": 5, "metadata": metadata, "cells": cells}
    )


def _digest(result: GradeResult) -> str:
    """What an autograded notebook was made from: the result (without the reports' additions)."""
    data = result.to_json()
    data.pop("adjustments", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _made_from(path: Path) -> str | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))["metadata"][METADATA_KEY]["made_from"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


class _Skipped(Exception):
    """This result gets no autograded notebook; the message says why."""


def _write_notebook(out_dir: Path, result: GradeResult, release_metadata: dict[str, dict]) -> bool:
    """Write ``result``'s folders and autograded notebook; False if it was already up to date."""
    lab_id = result.lab
    if lab_id is None:  # only graded results, which have their lab, are written
        raise _Skipped(f"{result.file}: no lab, so no notebook")
    (out_dir / "source" / lab_id).mkdir(parents=True, exist_ok=True)
    if not safe_folder_name(result.student_id):
        raise _Skipped(
            f"{result.student_id!r} ({result.file}): a student id that cannot be a folder name"
        )
    (out_dir / "submitted" / result.student_id / lab_id).mkdir(parents=True, exist_ok=True)
    path = out_dir / "autograded" / result.student_id / lab_id / f"{lab_id}.ipynb"
    if path.exists():
        made_from = _made_from(path)
        if made_from == _digest(result):
            return False
        # nbgrader's own autograde wrote it (OUT is a course folder): not ours to replace
        if made_from is None:
            raise _Skipped(f"{path} was not written by the autograder: it was left as it is")
    try:
        submission = read_submission(Path(result.file), result.student_id)
    except OSError as error:
        raise _Skipped(
            f"{result.file}: the submission cannot be read any more ({error.strerror})"
        ) from None
    if (
        submission.sha256 != result.sha256
        or submission.status != Status.OK
        or submission.notebook is None  # (never so when the status is ok)
    ):
        raise _Skipped(
            f"{result.file}: the file changed since it was graded; grade again to see it"
        )
    if lab_id not in release_metadata:
        release_metadata[lab_id] = dict(get_lab(lab_id).release_notebook().metadata)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    notebook = autograded_notebook(result, submission.notebook, release_metadata[lab_id])
    written.write_text(nbformat.v4.nbjson.writes(notebook), encoding="utf-8")
    os.replace(written, path)
    return True


def write_course(
    out_dir: Path, results: list[GradeResult], db_path: Path | None = None
) -> CourseLayout:
    """Write formgrader's course layout into ``out_dir`` for every graded result (see the module).
    Whatever one submission does, it costs its own notebook only: the reason is in ``skipped``."""
    out_dir = Path(out_dir)
    db_path = Path(db_path or out_dir / "gradebook.db")
    layout = CourseLayout()
    release_metadata: dict[str, dict] = {}
    out_dir.mkdir(parents=True, exist_ok=True)
    config = out_dir / CONFIG_NAME
    if not config.exists() or config.read_text(encoding="utf-8", errors="replace").startswith(
        CONFIG_MARK
    ):
        config.write_text(config_text(out_dir, db_path), encoding="utf-8")
    else:
        layout.skipped.append(f"{config} was not written by the autograder: it was left as it is")
    for result in results:
        if not result.graded:
            continue
        try:
            if _write_notebook(out_dir, result, release_metadata):
                layout.written += 1
            else:
                layout.current += 1
        except _Skipped as skipped:
            layout.skipped.append(str(skipped))
        # RecursionError, MemoryError, a full disk...: this notebook only
        except Exception as error:
            layout.skipped.append(
                f"{result.file}: no notebook for formgrader ({type(error).__name__}: "
                f"{str(error)[:200]})"
            )
    return layout


def write_course_or_say_why(
    out_dir: Path, results: list[GradeResult], db_path: Path | None = None
) -> None:
    """:func:`write_course`; what it could not write is said on stderr, one line each, and never
    stops the command that called it (the grades are recorded and reported whatever happens
    here)."""
    import sys

    try:
        layout = write_course(out_dir, results, db_path)
    except Exception as error:  # a full disk, an unwritable OUT...: formgrader's view only
        print(f"note: formgrader's course folders could not be written in {terminal(out_dir)} "
              f"({type(error).__name__}: {terminal(str(error)[:200])})", file=sys.stderr)
        return
    for reason in layout.skipped[:5]:
        print(f"note: formgrader: {terminal(reason)}", file=sys.stderr)
    if len(layout.skipped) > 5:
        print(
            f"note: formgrader: {len(layout.skipped) - 5} more submission(s) like these have no "
            f"notebook in {Path(out_dir) / 'autograded'}",
            file=sys.stderr,
        )

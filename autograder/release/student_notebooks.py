"""Release the student notebooks from the solution sources with nbgrader's own preprocessors.

``generate_assignment`` needs a course directory and a CLI start (about 5 s); running its
preprocessor pipeline in-process gives the same student notebook, records the lab's cells in the
gradebook the same way (``SaveCells``), and lets the release be checked for drift in tests.
"""
from __future__ import annotations

import copy
import tempfile
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook
from nbgrader.converters.generate_assignment import GenerateAssignment
from nbgrader.preprocessors import IncludeHeaderFooter, InstantiateTests
from traitlets.config import Config

from autograder.course import current
from autograder.labs import Lab, all_labs
from autograder.release.submit_cells import with_submit_cells

# nbgrader's own generate_assignment steps, minus the two that need a course directory
# (header/footer files, autotest templates) and that these labs do not use.
SKIPPED_STEPS = (IncludeHeaderFooter, InstantiateTests)


def release_steps() -> list:
    config = Config()
    config.ClearSolutions.enforce_metadata = True
    defaults = GenerateAssignment.class_traits()["preprocessors"].default()
    return [step(config=config) for step in defaults if step not in SKIPPED_STEPS]


def db_url_for(db_path: Path) -> str:
    return f"sqlite:///{Path(db_path).resolve()}"


def release_notebook(lab: Lab, db_path: Path) -> nbformat.NotebookNode:
    """The student version of ``lab``; records the lab's cells in the gradebook at ``db_path``."""
    course = current()
    url = db_url_for(db_path)
    with Gradebook(url) as gradebook:
        gradebook.update_or_create_assignment(lab.lab_id)
    nb = copy.deepcopy(lab.solution_notebook())
    if course.prepare_source:
        # before nbgrader's steps, so that its checksums are of what the student gets
        for cell in nb.cells:
            cell.source = course.prepare_source(cell.source)
    # the Submit cell and its helper (autograder/release/submit_cells.py)
    with_submit_cells(nb, lab.lab_id, course)
    resources = {"nbgrader": {"assignment": lab.lab_id, "notebook": lab.lab_id, "db_url": url}}
    for step in release_steps():
        nb, resources = step.preprocess(nb, resources)
    for key in ("references", "alternatives"):  # the grader's business, not the student's
        nb.metadata.get(course.metadata_key, {}).pop(key, None)
    return nb


def register_labs(db_path: Path, labs: list[Lab] | None = None) -> None:
    """Make sure every lab and its graded cells are in the gradebook (idempotent)."""
    for lab in all_labs().values() if labs is None else labs:
        release_notebook(lab, db_path)


def release(out_dir: Path | None = None, db_path: Path | None = None) -> list[Path]:
    """Write ``<out_dir>/<lab_id>.ipynb`` (default: the course's notebooks) for every lab; returns
    the paths."""
    out_dir = Path(out_dir or current().notebooks)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as scratch:
        db = db_path or Path(scratch) / "gradebook.db"
        for lab in all_labs().values():
            path = out_dir / f"{lab.lab_id}.ipynb"
            nbformat.write(release_notebook(lab, db), path)
            written.append(path)
    return written

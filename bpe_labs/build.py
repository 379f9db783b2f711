"""Build the student notebooks from the solution sources with nbgrader's own preprocessors.

``generate_assignment`` needs a course directory and a CLI start (about 5 s); running its
preprocessor pipeline in-process gives the same student notebook, records the lab's cells in the
gradebook the same way (``SaveCells``), and lets the build be checked for drift in tests.
"""
from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook
from nbgrader.converters.generate_assignment import GenerateAssignment
from nbgrader.preprocessors import IncludeHeaderFooter, InstantiateTests
from traitlets.config import Config

from autograder import REPO_ROOT
from autograder.labs import Lab, NOTEBOOKS_DIR, all_labs

# The course's home: the GitHub repository (and branch) that publishes this kit. The solution notebooks
# name the default; the build writes the configured one into the Colab badges and into corpus_prep's
# pointer to its documents. Set it once when building for your course: BPE_LABS_HOME=owner/name@branch.
DEFAULT_HOME = "bpe-labs/bpe-labs@main"
DOCUMENTS_DIR = REPO_ROOT / "data" / "documents"
EMBEDDED_DOCUMENTS = "EMBEDDED_DOCUMENTS = {}\n"


def course_home() -> tuple[str, str]:
    """``(owner/name, branch)`` of the course's home repository."""
    repository, _, branch = os.environ.get("BPE_LABS_HOME", DEFAULT_HOME).partition("@")
    return repository, branch or "main"


def with_course_home(source: str) -> str:
    """The default home's URLs in ``source`` replaced by the configured home's."""
    default_repository, default_branch = DEFAULT_HOME.split("@")
    repository, branch = course_home()
    return (source.replace(f"github/{default_repository}/blob/{default_branch}/", f"github/{repository}/blob/{branch}/")
                  .replace(f"https://github.com/{default_repository}", f"https://github.com/{repository}"))


def with_documents(source: str) -> str:
    """corpus_prep's loader cell carrying the lab's documents, so that it runs alone (Colab)."""
    if EMBEDDED_DOCUMENTS not in source:
        return source
    documents = {path.name: path.read_text(encoding="utf-8") for path in sorted(DOCUMENTS_DIR.glob("*.md"))}
    return source.replace(EMBEDDED_DOCUMENTS, f"EMBEDDED_DOCUMENTS = {documents!r}\n")

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
    url = db_url_for(db_path)
    with Gradebook(url) as gradebook:
        gradebook.update_or_create_assignment(lab.lab_id)
    nb = copy.deepcopy(lab.solution_notebook())
    for cell in nb.cells:  # before nbgrader's steps, so that its checksums are of what the student gets
        cell.source = with_documents(with_course_home(cell.source))
    resources = {"nbgrader": {"assignment": lab.lab_id, "notebook": lab.lab_id, "db_url": url}}
    for step in release_steps():
        nb, resources = step.preprocess(nb, resources)
    for key in ("references", "alternatives"):  # the grader's business, not the student's
        nb.metadata.get("bpe_labs", {}).pop(key, None)
    return nb


def register_labs(db_path: Path, labs: list[Lab] | None = None) -> None:
    """Make sure every lab and its graded cells are in the gradebook (idempotent)."""
    for lab in all_labs().values() if labs is None else labs:
        release_notebook(lab, db_path)


def build(out_dir: Path = NOTEBOOKS_DIR, db_path: Path | None = None) -> list[Path]:
    """Write ``notebooks/<lab_id>.ipynb`` for every lab; returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as scratch:
        db = db_path or Path(scratch) / "gradebook.db"
        for lab in all_labs().values():
            path = out_dir / f"{lab.lab_id}.ipynb"
            nbformat.write(release_notebook(lab, db), path)
            written.append(path)
    return written

"""Build the BPE Labs student notebooks: the engine's nbgrader release
(``autograder.release.student_notebooks``), with the course's home
written into the Colab badges and corpus_prep's documents embedded.
"""
from __future__ import annotations

import os
from pathlib import Path

# Re-exported: this module's API.
from autograder.release.student_notebooks import (  # noqa: F401
    db_url_for,
    register_labs,
    release,
    release_notebook,
)
from bpe_labs import ROOT

# The course's home: the GitHub repository (and branch) that publishes this kit. The solution
# notebooks name the default; the build writes the configured one into the Colab badges and into
# corpus_prep's pointer to its documents. Set it once when building for your course:
# BPE_LABS_HOME=owner/name@branch.
# pointer to its documents. Set it once when building
# for your course: BPE_LABS_HOME=owner/name@branch.
DEFAULT_HOME = "bpe-labs/bpe-labs@main"
DOCUMENTS_DIR = ROOT / "data" / "documents"
EMBEDDED_DOCUMENTS = "EMBEDDED_DOCUMENTS = {}\n"


def course_home() -> tuple[str, str]:
    """``(owner/name, branch)`` of the course's home repository."""
    repository, _, branch = os.environ.get("BPE_LABS_HOME", DEFAULT_HOME).partition("@")
    return repository, branch or "main"


def badge_note() -> str:
    """Where the built notebooks' Colab badges point, and the
    setting that changes it (what ``build`` prints)."""
    repository, branch = course_home()
    where = (f"Colab badges point at https://github.com/{repository} "
             f"(branch {branch}, notebooks/<lab>.ipynb)")
    if "BPE_LABS_HOME" not in os.environ:
        return (f"{where}, the kit's placeholder: publish the notebooks in your course's "
                "repository and build again "
                f"with BPE_LABS_HOME=owner/name@branch")
    return f"{where}, from BPE_LABS_HOME: publish notebooks/ there so that the badges open them"


def with_course_home(source: str) -> str:
    """The default home's URLs in ``source`` replaced by the configured home's."""
    default_repository, default_branch = DEFAULT_HOME.split("@")
    repository, branch = course_home()
    return (source.replace(f"github/{default_repository}/blob/{default_branch}/",
                           f"github/{repository}/blob/{branch}/")
                  .replace(f"https://github.com/{default_repository}",
                           f"https://github.com/{repository}"))


def with_documents(source: str) -> str:
    """corpus_prep's loader cell carrying the lab's documents, so that it runs alone (Colab)."""
    if EMBEDDED_DOCUMENTS not in source:
        return source
    documents = {path.name: path.read_text(encoding="utf-8")
                 for path in sorted(DOCUMENTS_DIR.glob("*.md"))}
    return source.replace(EMBEDDED_DOCUMENTS, f"EMBEDDED_DOCUMENTS = {documents!r}\n")


def prepare_source(source: str) -> str:
    """A cell's source as the student gets it (the course's ``prepare_source``)."""
    return with_documents(with_course_home(source))


def build(out_dir: Path | None = None, db_path: Path | None = None) -> list[Path]:
    """Write ``notebooks/<lab_id>.ipynb`` for every lab; returns the paths written."""
    return release(out_dir, db_path)

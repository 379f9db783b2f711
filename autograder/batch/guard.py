"""The course files the grader trusts, hashed before grading and checked before every result is
kept.

Hidden tests import the course's trusted modules (``Course.trusted_modules``) into the grader's
process, the solution notebooks hold the hidden tests and points, the released notebooks decide what
a repair restores. A kernel that managed to change any of them could run code in the grader or forge
grades, so a batch refuses to go on the moment one of them differs from what it was at the start.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from autograder.course import Course, current


class CourseChanged(RuntimeError):
    """A course file changed while grading: nothing graded from then on can be trusted."""


def course_files(lab_ids: list[str] | None = None, course: Course | None = None) -> list[Path]:
    """What the grader reads or imports while it grades: the labs' solutions (hidden tests, points)
    and released notebooks (all labs, or those of ``lab_ids``), the course's trusted modules that
    hidden tests import. (The grader's other modules are in memory before the first kernel
    starts.)"""
    course = course or current()
    labs = ["*"] if lab_ids is None else list(lab_ids)
    found = [
        path
        for lab in labs
        for folder in (course.solutions, course.notebooks)
        for path in Path(folder).glob(f"{lab}.ipynb")
    ]
    found += course.trusted_files()
    return sorted(path for path in found if "__pycache__" not in path.parts)


def fingerprint(files: list[Path]) -> dict[str, str]:
    """File -> SHA-256 of its bytes ("missing" for a file that is gone)."""
    hashes = {}
    for path in files:
        try:
            hashes[str(path)] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            hashes[str(path)] = "missing"
    return hashes


def digest(hashes: dict[str, str]) -> str:
    """One short hash for all files: what a stored result's ``sources`` must equal to be reused."""
    return hashlib.sha256(
        "\n".join(f"{name} {value}" for name, value in sorted(hashes.items())).encode()
    ).hexdigest()[:16]


class CourseGuard:
    """Takes the course's fingerprint once; :meth:`check` raises :class:`CourseChanged` if it
    moved."""

    def __init__(self, files: list[Path] | None = None, module_folders: list[Path] | None = None):
        self.files = list(files) if files is not None else course_files()
        self.preload()
        # where a new module would be imported by a hidden test
        self.module_folders = (
            module_folders if module_folders is not None else current().trusted_folders()
        )
        self.hashes = fingerprint(self.files)
        self.digest = digest(self.hashes)

    def check(self) -> None:
        now = fingerprint(self.files)
        new = [
            path
            for folder in self.module_folders
            for path in Path(folder).rglob("*.py")
            if "__pycache__" not in path.parts
        ]
        now.update({str(path): "new" for path in new if str(path) not in now})
        changed = sorted(
            name for name in set(now) | set(self.hashes) if now.get(name) != self.hashes.get(name)
        )
        if changed:
            raise CourseChanged(
                "course files changed while grading, so no further result can be trusted: "
                + ", ".join(changed[:10])
                + " (restore them, e.g. with git, and run the same command again)"
            )

    @staticmethod
    def preload() -> None:
        """Import every module hidden tests import, now: workers forked later never read them from
        disk, and a change after this point is caught by :meth:`check` before any result is kept."""
        import importlib
        import pkgutil

        for name in current().trusted_modules:
            module = importlib.import_module(name)
            for inner in pkgutil.walk_packages(getattr(module, "__path__", []), f"{name}."):
                importlib.import_module(inner.name)

"""The course the engine grades: one object naming its folders, its labs' metadata key, the Python
packages its hidden tests import and what a student's kernel may read. The engine knows nothing
else about a course.

The course is found, in this order: ``use()`` (``--course module:attr`` on the command line), the
``AUTOGRADER_COURSE`` environment variable (``module:attr``; grading processes inherit it), else the
one course installed under the ``autograder.courses`` entry point group.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Callable

ENTRY_POINT_GROUP = "autograder.courses"
COURSE_VARIABLE = "AUTOGRADER_COURSE"


@dataclass(frozen=True)
class Course:
    name: str  # shown in reports and logs
    spec: str  # "module:attr" that loads this object again (grading processes, Gradescope)
    root: Path  # the folder holding the course's files: no kernel may read it
    solutions: Path  # nbgrader source notebooks: solutions, hidden tests, points (one lab each)
    notebooks: Path  # the released student notebooks
    data: Path  # the course's data folder: a kernel may read it, and sees it as ./data
    default_data: Path  # the corpora notebooks load unless the instructor names others
    # notebook metadata key naming a lab: {key: {"lab": ..., "title": ..., "order": ...}}
    metadata_key: str
    data_variable: str  # environment variable through which notebooks find their corpora
    # Modules and packages hidden tests import: hashed and imported before grading, checked before
    # every result is kept, never readable by a kernel (the folders of their top-level packages).
    trusted_modules: tuple[str, ...] = ()
    # example submissions (examples/submissions) and their expected points
    examples: Path | None = None
    # Applied to every cell's source before nbgrader's release steps (links, embedded files).
    prepare_source: Callable[[str], str] | None = None
    # Adds the course's own subcommands to the command line (argparse sub-parsers).
    add_commands: Callable | None = None
    # What ``build`` says after writing the student notebooks (say, where their Colab badges point).
    release_note: Callable[[], str] | None = None

    def lab_ids(self) -> list[str]:
        """The labs' ids, from the solution notebooks' names alone (nothing is read: for the command
        line)."""
        return sorted(path.stem for path in Path(self.solutions).glob("*.ipynb"))
    # The grading service (autograder/service): the environment variable naming its URL when the
    # notebooks are built (their Submit cell posts there; unset: the cell says how to hand in), and
    # the one a
    # student's kernel may hold their token in.
    server_variable: str | None = None
    token_variable: str | None = None

    def trusted_folders(self) -> list[Path]:
        """Folders of the trusted packages (where a new module would be imported from by a hidden
        test)."""
        return _package_folders(self.trusted_modules)

    def package_folders(self) -> list[Path]:
        """Folders of the top-level packages of the trusted modules (what a kernel may not read):
        the one imported, and any other copy on the Python path (an installed one beside a
        checkout)."""
        names = list(dict.fromkeys(name.split(".")[0] for name in self.trusted_modules))
        copies = [Path(entry or ".").resolve() / name for entry in sys.path for name in names]
        return list(
            dict.fromkeys([*_package_folders(names), *(path for path in copies if path.is_dir())])
        )

    def trusted_files(self) -> list[Path]:
        """The source files of the trusted modules (a package: every ``.py`` beneath it)."""
        files = []
        for name in self.trusted_modules:
            found = importlib.util.find_spec(name)
            if found is None:
                raise ModuleNotFoundError(f"course {self.name}: no module {name}")
            if found.submodule_search_locations:
                for location in found.submodule_search_locations:
                    files += [
                        path
                        for path in Path(location).rglob("*.py")
                        if "__pycache__" not in path.parts
                    ]
            elif found.origin:
                files.append(Path(found.origin))
        return sorted(set(files))

    def private_folders(self) -> list[Path]:
        """What a student's kernel must never read: the course's files and trusted packages."""
        return list(dict.fromkeys([Path(self.root).resolve(), *self.package_folders()]))


def _package_folders(names) -> list[Path]:
    folders = []
    for name in names:
        found = importlib.util.find_spec(name)
        if found and found.submodule_search_locations:
            folders += [Path(location).resolve() for location in found.submodule_search_locations]
    return list(dict.fromkeys(folders))


_current: Course | None = None


def load(spec: str) -> Course:
    """The course object named by ``"module:attr"``."""
    module_name, _, attribute = spec.partition(":")
    course = getattr(importlib.import_module(module_name), attribute or "COURSE")
    if not isinstance(course, Course):
        raise TypeError(f"{spec} is a {type(course).__name__}, not an autograder.course.Course")
    return course


def installed() -> dict[str, str]:
    """Entry point name -> "module:attr" of every installed course."""
    return {point.name: point.value for point in entry_points(group=ENTRY_POINT_GROUP)}


def find() -> Course:
    spec = os.environ.get(COURSE_VARIABLE)
    if spec:
        return load(spec)
    courses = installed()
    if len(courses) == 1:
        return load(next(iter(courses.values())))
    if not courses:
        raise LookupError(
            f"no course: install one (entry point group {ENTRY_POINT_GROUP}), pass --course "
            f"module:attr or set {COURSE_VARIABLE}"
        )
    raise LookupError(
        f"{len(courses)} courses are installed ({', '.join(sorted(courses))}): pass --course "
        f"module:attr or set {COURSE_VARIABLE}"
    )


def use(course: Course | str) -> Course:
    """Grade ``course`` from now on, in this process and in the grading processes it starts."""
    global _current
    _current = load(course) if isinstance(course, str) else course
    os.environ[COURSE_VARIABLE] = _current.spec
    return _current


def current() -> Course:
    """The course being graded (found once, see the module docstring)."""
    global _current
    if _current is None or _current.spec != os.environ.get(COURSE_VARIABLE, _current.spec):
        _current = find()
    return _current

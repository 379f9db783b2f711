"""What a submissions folder holds: the folder to grade, and every entry in it with its kind.

Every entry gets a row, whatever it is: a notebook is graded; a PDF, a ``.py`` or a zip archive gets
a row saying what it is and what to do; a symbolic link, a hard link, a FIFO, a socket or a device
is never opened or followed (it could lead out of the folder, to the course's solutions say, or
block a read forever) and gets a ``not_a_regular_file`` row. The folder is walked without following
links, and entries are named by their path inside it (never resolved), so a link cannot take a row
outside.

A folder that is missing, empty or holds no notebook at all is refused (:class:`NothingToGrade`)
before anything is written: a wrong path must never look like a class that handed in nothing.
Given an nbgrader course folder (``source/``, ``submitted/``...), its ``submitted/`` folder is
graded.
"""
from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

# The kinds of entries.
NOTEBOOK, ARCHIVE, OTHER_FILE, SPECIAL = "notebook", "archive", "other file", "special"
# Folders a tool writes beside the hand-ins, never a student: Jupyter's autosaves.
SKIPPED_FOLDERS = frozenset({".ipynb_checkpoints"})
# What an nbgrader course folder holds beside submitted/ (nbgrader's CourseDirectory layout).
NBGRADER_SIBLINGS = (
    "nbgrader_config.py",
    "source",
    "release",
    "autograded",
    "feedback",
    "gradebook.db",
)


class NothingToGrade(ValueError):
    """The folder to grade is missing, empty or holds no notebook; the message says what to pass
    instead."""


@dataclass(frozen=True)
class Entry:
    """One entry of the submissions folder."""

    path: Path  # the folder joined with ``relative``: never resolved, so a link stays a link
    relative: Path
    kind: str  # NOTEBOOK | ARCHIVE | OTHER_FILE | SPECIAL
    what: str = ""  # for the row of an entry that is not graded: what it is


def folder_to_grade(folder: Path) -> tuple[Path, str]:
    """The folder whose entries are the submissions, and a line to say when it is not ``folder``
    itself.

    Raises :class:`NothingToGrade` when ``folder`` is missing or not a folder.
    """
    folder = Path(folder)
    if not folder.exists():
        raise NothingToGrade(
            f"{folder} does not exist: check the path, and pass the folder the handed-in "
            f"notebooks were downloaded or unpacked into"
        )
    if not folder.is_dir():
        raise NothingToGrade(
            f"{folder} is a file, not a folder: pass the folder that holds the handed-in "
            "notebooks, or the LMS's submissions .zip as it was downloaded"
        )
    submitted = folder / "submitted"
    if (
        submitted.is_dir()
        and not submitted.is_symlink()
        and any((folder / name).exists() for name in NBGRADER_SIBLINGS)
    ):
        return submitted, (f"{folder} is an nbgrader course folder: grading its submitted/ folder "
                           f"(one folder per student), not its source/ or release/ notebooks")
    return folder, ""


def _what(mode: int, path: Path) -> str:
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return (f"a symbolic link (to {target}), not a file: links are never followed; put the "
                "file itself in the folder")
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a file"
    if stat.S_ISDIR(mode):
        return "a folder that could not be read"
    return "not a regular file"


def _archive_note(path: Path) -> str:
    """What a zip holds (from its directory, nothing extracted), and how to grade it."""
    try:
        with zipfile.ZipFile(path) as archive:
            inside = [
                name
                for name in archive.namelist()
                if name.endswith(".ipynb") and "__MACOSX" not in name
            ]
    except (zipfile.BadZipFile, OSError, ValueError):
        return ("a .zip archive that could not be opened, not a notebook: ask the student for the "
                ".ipynb file")
    if not inside:
        return "a .zip archive with no notebook inside: ask the student for the .ipynb file"
    shown = ", ".join(inside[:3]) + (f" and {len(inside) - 3} more" if len(inside) > 3 else "")
    return (
        f"a .zip archive holding {shown}, not a notebook: unpack the notebook into the folder "
        f"under this file's name ({path.stem}.ipynb) and grade again; the results so far are kept"
    )


def classify(path: Path, relative: Path) -> Entry:
    """The entry at ``path``, from its ``lstat`` (nothing is opened but a zip's directory)."""
    try:
        info = os.lstat(path)
    except OSError as error:
        return Entry(path, relative, SPECIAL, f"could not be read ({error.strerror})")
    if not stat.S_ISREG(info.st_mode):
        return Entry(path, relative, SPECIAL, _what(info.st_mode, path))
    if info.st_nlink > 1:
        return Entry(
            path,
            relative,
            SPECIAL,
            f"a hard link (one of {info.st_nlink} names of one file), not a file of its "
            "own: copy it (cp FILE COPY && mv COPY FILE) and grade again",
        )
    suffix = path.suffix.lower()
    if suffix == ".ipynb":
        return Entry(path, relative, NOTEBOOK)
    if suffix == ".zip":
        return Entry(path, relative, ARCHIVE, _archive_note(path))
    kind = f"a {suffix} file" if suffix else "a file without an extension"
    return Entry(
        path,
        relative,
        OTHER_FILE,
        f"{kind}, not a Jupyter notebook (.ipynb): ask the student for the notebook",
    )


def entries(folder: Path) -> list[Entry]:
    """Every entry under ``folder`` (but Jupyter's checkpoints), sorted by path; links are not
    followed."""
    folder = Path(folder)
    found = []
    unreadable: list[OSError] = []
    for top, folders, files in os.walk(folder, followlinks=False, onerror=unreadable.append):
        here = Path(top)
        for name in list(folders):
            if name in SKIPPED_FOLDERS:
                folders.remove(name)
            elif (here / name).is_symlink():  # os.walk lists it but does not enter it
                found.append(classify(here / name, (here / name).relative_to(folder)))
        found += [classify(here / name, (here / name).relative_to(folder)) for name in files]
    for error in unreadable:
        if error.filename and Path(error.filename) != folder:
            path = Path(error.filename)
            found.append(
                Entry(
                    path,
                    path.relative_to(folder),
                    SPECIAL,
                    f"a folder that could not be read ({error.strerror})",
                )
            )
        elif error.filename:
            raise NothingToGrade(
                f"{folder} could not be read ({error.strerror}): check its permissions"
            )
    return sorted(found, key=lambda entry: str(entry.relative))


def check_something_to_grade(folder: Path, found: list[Entry]) -> None:
    """Raise :class:`NothingToGrade` when ``found`` holds no notebook, saying what the folder holds
    instead."""
    if any(entry.kind == NOTEBOOK for entry in found):
        return
    if not found:
        raise NothingToGrade(
            f"{folder} is empty: pass the folder the handed-in notebooks were downloaded or "
            "unpacked into"
        )
    archives = [entry for entry in found if entry.kind == ARCHIVE]
    if archives and len(archives) == len(found):
        raise NothingToGrade(
            f"{folder} holds only .zip archives ({len(archives)}), no notebook: unpack them "
            f"(e.g. unzip ARCHIVE -d {folder}) and grade again"
        )
    shown = ", ".join(str(entry.relative) for entry in found[:3]) + (
        ", ..." if len(found) > 3 else ""
    )
    raise NothingToGrade(
        f"{folder} holds no notebook (.ipynb), only {len(found)} other "
        f"entr{'y' if len(found) == 1 else 'ies'} ({shown}): pass the folder of the handed-in "
        "notebooks"
    )

"""Intake: turn a handed-in file into a notebook of a known lab, or a clear reason why not.

Accepts what students really hand in: Colab downloads, VS Code saves (cell metadata dropped),
nbformat 3 notebooks (converted). The lab comes from the notebook metadata the release carries,
or, when an editor dropped it, from the given cells the notebook still contains.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

import nbformat

from autograder.course import current
from autograder.grading.folder import Entry, entries
from autograder.grading.identity import Identity, Roster, identify, tell_apart
from autograder.grading.names import escaped
from autograder.labs import all_labs, nbgrader_meta, release_cells
# Statuses of a row that could not be graded (named here for this module's callers too).
from autograder.grading.result import (  # noqa: F401
    DUPLICATE,
    EMPTY,
    INVALID_JSON,
    NOT_A_NOTEBOOK,
    NOT_A_REGULAR_FILE,
    TOO_LARGE,
    UNKNOWN_LAB,
    Status,
)

# The nbgrader cell metadata the grader reads, and the types nbgrader writes.
NBGRADER_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "grade_id": str,
    "solution": bool,
    "grade": bool,
    "locked": bool,
    "points": (int, float),
    "cell_type": str,
    "checksum": str,
    "task": bool,
}
# A lab notebook with every output and plot is a few MB; parsing JSON takes up to ~20 times its
# size in memory, so a larger file is reported without being read.
MAX_FILE_BYTES = 100 * 1024**2


@dataclass
class Submission:
    path: Path
    student_id: str
    sha256: str
    notebook: nbformat.NotebookNode | None = None
    lab_id: str | None = None
    status: Status = Status.OK  # or why it cannot be graded
    message: str = ""
    notes: list[str] = field(default_factory=list)


def student_id_from_flat_name(path: Path) -> str:
    """The student id of a file in a flat folder, from the prefix its LMS export wrote (see
    identity.py).

    >>> student_id_from_flat_name(Path("jdoe_1234_5678_toy_bpe.ipynb"))  # Canvas
    'jdoe'
    >>> student_id_from_flat_name(Path("toy-correct.ipynb"))
    'toy-correct'
    >>> # a name of the student's own choosing is not cut short
    >>> student_id_from_flat_name(Path("bob_zzz_toy_bpe.ipynb"))
    'bob_zzz'
    """
    return identify(Path(Path(path).name), tuple(all_labs())).student_id


class HandedIn(NamedTuple):
    """One entry of a submissions folder, and who handed it in."""

    entry: Entry
    identity: Identity


def find_submissions(folder: Path, roster: Roster | None = None) -> list[HandedIn]:
    """(entry, identity) pairs for every entry of the folder (folder.py: notebooks, other files,
    links...): a flat folder (LMS exports), Moodle's folders, or nbgrader's
    ``<student>/<lab>/*.ipynb``. Two LMS users with one name are told apart, never merged. A student
    id is :func:`~autograder.grading.names.escaped`: a name that is not UTF-8, or holds control
    characters, is recorded faithfully and shown as it is."""
    found = entries(Path(folder))
    labs = tuple(all_labs())
    identities = tell_apart([_escaped(identify(entry.relative, labs)) for entry in found])
    if roster is not None:
        identities = [roster.resolve(identity) for identity in identities]
    return [HandedIn(entry, identity) for entry, identity in zip(found, identities)]


def _escaped(identity: Identity) -> Identity:
    return replace(identity, student_id=escaped(identity.student_id), name=escaped(identity.name))


def _normalized(source: str) -> str:
    return re.sub(r"\s+", " ", source).strip()


def recognise_lab(nb: nbformat.NotebookNode) -> str | None:
    """The lab of a notebook: its metadata if it names a known lab, else the best match of
    content."""
    labs = all_labs()
    meta = nb.metadata.get(current().metadata_key)
    # a tool may have written anything here
    named = meta.get("lab") if isinstance(meta, dict) else None
    if named in labs:
        return named
    sources = {_normalized(cell.source) for cell in nb.cells}
    best, best_share = None, 0.0
    for lab in labs.values():
        given = [
            _normalized(c.source)
            for c in release_cells(lab.lab_id)
            if nbgrader_meta(c).get("locked")
            and not nbgrader_meta(c).get("grade")
            and c.source.strip()
        ]
        share = sum(s in sources for s in given) / max(len(given), 1)
        if share > best_share:
            best, best_share = lab.lab_id, share
    return best if best_share >= 0.5 else None


def _sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def file_sha256(path: Path) -> str:
    """The content hash a submission is known by (what resume compares), without parsing it."""
    digest = hashlib.sha256()
    handle = _open_regular(path)
    if handle is None:
        raise OSError(errno.EINVAL, "not a regular file of its own", str(path))
    with handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _open_regular(path: Path):
    """``path`` opened for reading if it is a regular file of its own, else None: a link is never
    followed, and a FIFO or device never blocks (the folder may have changed since it was
    listed)."""
    try:
        handle = os.fdopen(
            os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC), "rb"
        )
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENXIO, errno.EMLINK):
            return None
        raise
    info = os.fstat(handle.fileno())
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        handle.close()
        return None
    return handle


# What students hand in instead of a notebook, by the bytes it starts with.
OTHER_FORMATS = ((b"%PDF-", "a PDF"), (b"PK\x03\x04", "a .zip archive"),
                 (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"))


def _other_format(raw: bytes) -> str:
    """What ``raw`` is when its first bytes say it is a PDF, a zip or an image, else ""."""
    return next((kind for magic, kind in OTHER_FORMATS if raw.startswith(magic)), "")


def read_submission(path: Path, student_id: str) -> Submission:
    handle = _open_regular(path)
    if handle is None:
        return Submission(
            Path(path),
            student_id,
            "",
            status=NOT_A_REGULAR_FILE,
            message="not a regular file of its own (a link, a FIFO or a device): it was not opened",
        )
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_FILE_BYTES:
            return Submission(
                Path(path),
                student_id,
                file_sha256(path),
                status=TOO_LARGE,
                message=f"the file is {size / 1024**2:.0f} MB, more than a notebook of this course "
                        f"can be ({MAX_FILE_BYTES // 1024**2} MB): clear its outputs and hand it "
                        "in again",
            )
        raw = handle.read()
    sub = Submission(Path(path), student_id, _sha256(raw))
    if not raw.strip():
        sub.status, sub.message = EMPTY, "the file is empty"
        return sub
    kind = _other_format(raw)
    if kind:  # named for what it is, whatever the file is called (the service's uploads too)
        sub.status, sub.message = (
            NOT_A_NOTEBOOK,
            f"the file is {kind}, not a Jupyter notebook (.ipynb): hand in the notebook itself "
            "(in Jupyter: File > Download, as .ipynb)",
        )
        return sub
    # Windows tools (PowerShell's Out-File, Notepad's "Unicode") save UTF-16 with a byte-order mark.
    encoding = "utf-16" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"
    try:
        data = json.loads(raw.decode(encoding))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        sub.status, sub.message = (
            INVALID_JSON,
            f"the file is not valid JSON ({str(error)[:200]}); was it saved or downloaded "
            "completely?",
        )
        return sub
    except RecursionError:
        sub.status, sub.message = (
            NOT_A_NOTEBOOK,
            "the file is JSON nested too deeply to be a notebook",
        )
        return sub
    if not isinstance(data, dict) or not ("cells" in data or "worksheets" in data):
        sub.status, sub.message = (
            NOT_A_NOTEBOOK,
            "the file is JSON but not a Jupyter notebook (no cells)",
        )
        return sub
    major = data.get("nbformat")
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
    except MemoryError:
        # the grader ran out of room, which says nothing of the file's kind: a grader_error row
        raise
    # RecursionError included: nesting that json allows and nbformat does not
    except Exception as error:
        sub.status, sub.message = (
            NOT_A_NOTEBOOK,
            f"the notebook could not be read ({type(error).__name__}: {str(error)[:200]})",
        )
        return sub
    if major != 4:
        sub.notes.append(f"converted from nbformat {major} to nbformat 4")
    if not isinstance(nb.get("metadata"), dict):
        nb["metadata"] = nbformat.NotebookNode()
    # a stray number or string is no cell
    nb.cells = [cell for cell in nb.cells if isinstance(cell, dict)]
    for cell in nb.cells:  # editors disagree on these; missing or odd ones are harmless for grading
        if cell.get("cell_type") not in ("code", "markdown", "raw"):
            cell["cell_type"] = "raw"
        if "id" in cell and not isinstance(cell["id"], str):
            del cell["id"]
        if not isinstance(cell.get("metadata"), dict):
            cell["metadata"] = nbformat.NotebookNode()
        if "nbgrader" in cell.metadata and not isinstance(cell.metadata["nbgrader"], dict):
            del cell.metadata["nbgrader"]
        grader = cell.metadata.get("nbgrader", {})
        for key in [
            key
            for key, kind in NBGRADER_FIELD_TYPES.items()
            if key in grader and not isinstance(grader[key], kind)
        ]:
            # a tool (or a student) wrote something of the wrong type: as if it were absent
            del grader[key]
        if cell["cell_type"] == "code" and not isinstance(cell.get("outputs", []), list):
            cell["outputs"] = []
        source = cell.get("source")
        if isinstance(source, list):
            source = "".join(line for line in source if isinstance(line, str))
        cell["source"] = source if isinstance(source, str) else ""  # "source": null from some tools
    sub.notebook = nb
    sub.lab_id = recognise_lab(nb)
    if sub.lab_id is None:
        sub.status = UNKNOWN_LAB
        sub.message = (f"this notebook is not one of the labs ({', '.join(all_labs())}): neither "
                       "its metadata nor its cells match")
    return sub

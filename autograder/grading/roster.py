"""The class list an export writes rows for, with the ids each LMS knows a student by.

The same CSV as ``grade --roster`` (autograder/grading/identity.py): ``student_id`` is required;
every other column is optional and used by the formats that need it:

==================  ==========================================================================
``name``            the name as the LMS shows it (Canvas's *Student* column, Moodle's *Full name*)
``email``           Moodle's gradebook import (``--identity email``) and worksheet
``login``           the login (a Canvas export's file names start with it)
``username``        Moodle's gradebook import (``--identity username``); else ``login``
``idnumber``        Moodle's gradebook import (``--identity idnumber``): the user's ID number
``user_id``         the LMS user id in export file names (Canvas user id, Moodle participant id)
``canvas_id``       Canvas's *ID* column (Canvas's user id); else ``user_id``
``sis_user_id``     Canvas's *SIS User ID*
``sis_login_id``    Canvas's *SIS Login ID*
``section``         Canvas's *Section*
==================  ==========================================================================
"""
from __future__ import annotations

import csv
import unicodedata
from dataclasses import dataclass, fields
from pathlib import Path


@dataclass(frozen=True)
class RosterEntry:
    student_id: str
    name: str = ""
    email: str = ""
    login: str = ""
    username: str = ""
    idnumber: str = ""
    user_id: str = ""
    canvas_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    line: int = 0  # where the row stands in the roster file

    @property
    def shown(self) -> str:
        """How messages name the student: ``s004 (Dee Dee)``."""
        return (
            f"{self.student_id} ({self.name})"
            if self.name and self.name != self.student_id
            else self.student_id
        )

    def keys(self) -> set[str]:
        """The names a graded result's student id may be for this student (see :func:`name_key`)."""
        names = (self.student_id, self.name, self.login, self.username, self.email.split("@", 1)[0])
        return {name_key(name) for name in names if name_key(name)}


COLUMNS = tuple(f.name for f in fields(RosterEntry) if f.name != "line")


def name_key(text: str) -> str:
    """Names compared without case, accents, spaces or punctuation (as identity.py compares them):
    Canvas writes "Lee, Ann" as leeann."""
    text = unicodedata.normalize("NFKD", text or "").casefold()
    return "".join(ch for ch in text if ch.isalnum())


class RosterProblems(ValueError):
    """A roster that cannot be used: one line per problem (each duplicate, each empty id)."""

    def __init__(self, lines: list[str]):
        super().__init__("\n".join(lines))
        self.lines = lines


def column_name(header: str) -> str:
    """A header as the roster's column it names, whatever its case or spacing: Canvas's
    ``Section`` and ``SIS User ID`` are ``section`` and ``sis_user_id``.

    >>> [column_name(h) for h in ("Section", " SIS User ID ", "student_id")]
    ['section', 'sis_user_id', 'student_id']
    """
    return "_".join((header or "").strip().casefold().replace("-", " ").split())


def read_roster(path: Path) -> list[RosterEntry]:
    """The roster's rows, in file order. Raises :class:`RosterProblems` (a ``ValueError``), one line
    per problem, for a roster that cannot be used: no student_id column, an empty student_id, or a
    student_id or e-mail given to two rows (each duplicate named with both lines: a grade must never
    go to the wrong one of two students)."""
    path = Path(path)
    try:
        handle = open(path, newline="", encoding="utf-8-sig")
    except OSError as error:
        raise ValueError(f"the roster {path} cannot be read ({error.strerror})") from None
    entries: list[RosterEntry] = []
    problems: list[str] = []
    seen: dict[tuple[str, str], int] = {}  # (column, value) -> the line it is on
    with handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames or "student_id" not in [
            column_name(name) for name in reader.fieldnames
        ]:
            raise RosterProblems([f"{path}: the roster needs a header row with a student_id column "
                                  f"(and any of {', '.join(COLUMNS[1:])})"])
        for line, raw in enumerate(reader, start=2):
            row = {
                column_name(key): (value or "").strip()
                for key, value in raw.items()
                if isinstance(value, str) and isinstance(key, str)
            }
            if not row.get("student_id"):
                problems.append(f"{path}, line {line}: the student_id is empty")
                continue
            for column, value in (("student_id", row["student_id"]),
                                  ("email", row.get("email", "").casefold())):
                if not value:
                    continue
                if (column, value) in seen:
                    problems.append(f"{path}, line {line}: {column} {value} is on line "
                                    f"{seen[(column, value)]} already")
                else:
                    seen[(column, value)] = line
            entries.append(
                RosterEntry(**{column: row.get(column, "") for column in COLUMNS}, line=line)
            )
    if problems:
        raise RosterProblems(problems)
    if not entries:
        raise RosterProblems([f"{path}: the roster has a header but no student"])
    return entries

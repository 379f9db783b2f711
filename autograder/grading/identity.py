"""Who handed a file in: the student id of a submission, from the LMS's export name or a roster.

A student chooses the name of the file they upload; the learning-management system puts its own
prefix in front when it exports. Only that prefix may decide the student, so a student who names
a file ``bob_zzz_toy_bpe.ipynb`` is never taken for bob. Export patterns recognised:

* **Canvas** (*Download Submissions*): ``<login>_<userid>_<submissionid>_<uploaded name>``, with
  ``LATE_`` after the login for a late submission and ``-1``, ``-2``... before ``.ipynb`` when the
  student uploaded the same name again: ``jdoe_LATE_1234_5678_toy_bpe-1.ipynb`` is jdoe's.
* **Moodle** (*Download all submissions*): ``<Full
Name>_<participantid>_assignsubmission_file_<uploaded name>``,
  or, with *Download submissions in folders*, a folder of that name holding the uploaded file.
* **nbgrader**: ``submitted/<student>/<lab>/<notebook>.ipynb``.
* Anything else: the file name without ``.ipynb`` and without a trailing ``_<lab>`` or ``-<lab>``
  of a known lab (``jdoe_toy_bpe.ipynb`` is jdoe's, ``bob_zzz_toy_bpe.ipynb`` bob_zzz's: see
  :func:`identify`).

Two different LMS users with the same name part are told apart by their user ids and reported,
never merged. A roster (``--roster FILE``, CSV) maps export names or user ids to the course's
own student ids: see :func:`read_roster`.
"""
from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from autograder.grading.result import NOT_ON_ROSTER, Status

CANVAS = re.compile(
    r"^(?P<name>[^_]+)_(?P<late>LATE_)?(?P<user>\d+)_(?P<submission>\d+)_(?P<upload>.+?)"
    r"(?:-(?P<again>\d+))?$"
)
MOODLE = re.compile(
    r"^(?P<name>.+?)_(?P<user>\d+)_assignsubmission_(?:file|onlinetext)_?(?P<upload>.*)$"
)


@dataclass(frozen=True)
class Identity:
    """Who a file is from, as far as its path says."""

    student_id: str
    source: str  # canvas | moodle | nbgrader | file name
    user_id: str | None = None  # the LMS's user id, when the export name carries one
    name: str = ""  # the name part the LMS wrote (Canvas login, Moodle full name)
    late: bool = False
    order: tuple = ()  # later submissions sort later
    note: str = ""  # said in the file's row (a collision told apart, a late submission)
    status: Status = Status.OK  # or NOT_ON_ROSTER


def _strip_lab_suffix(stem: str, lab_ids: tuple[str, ...]) -> str:
    for lab_id in sorted(lab_ids, key=len, reverse=True):
        for separator in ("_", "-"):
            if stem.endswith(separator + lab_id) and len(stem) > len(lab_id) + 1:
                return stem[: -len(lab_id) - 1]
    return stem


def identify(relative: Path, lab_ids: tuple[str, ...] = ()) -> Identity:
    """The identity of a file at ``relative`` (its path inside the submissions folder).

    >>> labs = ("toy_bpe", "gpt2_bpe")
    >>> [identify(Path(name), labs).student_id
    ...  for name in ("jdoe_toy_bpe.ipynb", "bob_zzz_toy_bpe.ipynb")]
    ['jdoe', 'bob_zzz']
    >>> late = identify(Path("jdoe_LATE_1234_5678_toy_bpe-1.ipynb"), labs)
    >>> late.student_id, late.source, late.user_id, late.late
    ('jdoe', 'canvas', '1234', True)
    >>> identify(Path("Ann Lee_77_assignsubmission_file_toy_bpe.ipynb"), labs).student_id
    'Ann Lee'
    >>> identify(Path("ann/toy_bpe/toy_bpe.ipynb"), labs).source
    'nbgrader'
    """
    parts = relative.parts
    if len(parts) == 3:
        return Identity(parts[0], "nbgrader", order=(relative.name,))
    stem = relative.stem
    # What the LMS wrote comes first, and a name the student chose can imitate the other pattern:
    # a Moodle folder names the student whatever the file inside is called; a Canvas prefix is at
    # the very start (a real Moodle name never matches CANVAS: its "assignsubmission" is no number),
    # while an uploaded name can hold "_777_assignsubmission_file_" anywhere.
    folder = MOODLE.match(parts[-2]) if len(parts) >= 2 else None
    if folder:
        return Identity(
            folder["name"],
            "moodle",
            folder["user"],
            folder["name"],
            order=(0, relative.name),
            note="Moodle folder export",
        )
    canvas = CANVAS.match(stem)
    if canvas:
        return Identity(
            canvas["name"],
            "canvas",
            canvas["user"],
            canvas["name"],
            late=bool(canvas["late"]),
            order=(int(canvas["submission"]), int(canvas["again"] or 0), relative.name),
            note="late submission" if canvas["late"] else "",
        )
    moodle = MOODLE.match(stem)
    if moodle:
        return Identity(
            moodle["name"], "moodle", moodle["user"], moodle["name"], order=(0, relative.name)
        )
    return Identity(_strip_lab_suffix(stem, lab_ids) or stem, "file name", order=(0, relative.name))


def tell_apart(identities: list[Identity]) -> list[Identity]:
    """Two LMS users with one name part (two Ann Lees) get ``<name>-<user id>`` each, with a
    note."""
    users = defaultdict(set)
    for identity in identities:
        if identity.user_id is not None:
            users[identity.student_id].add(identity.user_id)
    told = []
    for identity in identities:
        if len(users.get(identity.student_id, ())) > 1:
            others = sorted(users[identity.student_id] - {identity.user_id})
            note = (
                f"{len(others) + 1} students are named {identity.student_id!r} in the export; told "
                f"apart by user id (this file: {identity.user_id}; other: {', '.join(others)})"
            )
            identity = replace(identity, student_id=f"{identity.student_id}-{identity.user_id}",
                               note="; ".join(filter(None, [identity.note, note])))
        told.append(identity)
    return told


def _key(text: str) -> str:
    """Names compared without case, accents, spaces or punctuation: Canvas writes "Lee, Ann" as
    leeann."""
    text = unicodedata.normalize("NFKD", text).casefold()
    return "".join(ch for ch in text if ch.isalnum())


@dataclass(frozen=True)
class Roster:
    """Roster rows: the course's student id, and how the LMS export names that student."""

    by_user: dict
    by_name: dict
    by_id: dict

    def students(self) -> list[str]:
        """Every student id of the roster, sorted."""
        return sorted(self.by_id)

    def resolve(self, identity: Identity) -> Identity:
        """The identity with the roster's student id, or NOT_ON_ROSTER and why."""
        if identity.user_id and identity.user_id in self.by_user:
            return replace(identity, student_id=self.by_user[identity.user_id])
        for table, key in ((self.by_name, _key(identity.name)), (self.by_id, identity.student_id),
                           (self.by_name, _key(identity.student_id))):
            matches = table.get(key, []) if key else []
            if len(matches) == 1:
                return replace(identity, student_id=matches[0])
            if len(matches) > 1:
                return replace(
                    identity,
                    status=NOT_ON_ROSTER,
                    note="the roster has several students for this file name "
                         f"({', '.join(matches)}): add their LMS user ids to the roster",
                )
        return replace(
            identity,
            status=NOT_ON_ROSTER,
            note=f"no roster entry matches this file ({identity.source}: "
            f"{identity.name or identity.student_id}, user id {identity.user_id or 'none'})",
        )


def read_roster(path: Path) -> Roster:
    """A CSV with a header: ``student_id`` (required: the id grades are recorded under) and any of
    ``user_id`` (Canvas user id / Moodle participant id), ``name`` (as the export writes it: Canvas
    login such as ``leeann``, or Moodle full name such as ``Ann Lee``), ``login``, ``email``;
    column names in any case. The same file ``export --roster`` reads (roster.py): a duplicate
    student_id or e-mail, or a user id given to two students, is refused with one line each
    (:class:`~autograder.grading.roster.RosterProblems`)."""
    from autograder.grading.roster import RosterProblems, read_roster as roster_rows

    by_user: dict[str, str] = {}  # LMS user id -> student id
    by_name: defaultdict[str, list[str]] = defaultdict(list)  # name, login or email -> student ids
    by_id: defaultdict[str, list[str]] = defaultdict(list)
    problems = []
    for row in roster_rows(Path(path)):
        student = row.student_id
        user = row.user_id or row.canvas_id
        if user:
            if by_user.get(user, student) != student:
                problems.append(f"{path}, line {row.line}: user id {user} is given to two students "
                                f"({by_user[user]} and {student})")
            by_user[user] = student
        for column in ("name", "login", "email"):
            value = getattr(row, column)
            if column == "email":
                value = value.split("@", 1)[0]
            if value and student not in by_name[_key(value)]:
                by_name[_key(value)].append(student)
        by_id[student].append(student)
    if problems:
        raise RosterProblems(problems)
    return Roster(by_user, dict(by_name), dict(by_id))

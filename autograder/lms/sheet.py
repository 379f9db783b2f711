"""Graded results matched to roster students, and labs to LMS columns: the table every format
writes.

Every mismatch is a :class:`Problem`. An *error* stops the export, for a file that would put a
grade in the wrong place or quietly leave a graded student out: a submission not on the roster
(unless ``skip_unmatched``), a result that fits several roster students, two graded results for one
student and lab, two labs mapped to one LMS column, a lab that does not exist. A *note* is said
and the file is written: a roster student with no grade (an empty cell), a file that was not graded.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from autograder.labs import Lab, all_labs
from autograder.grading.roster import RosterEntry, name_key
from autograder.grading.result import MISSING, NOT_ON_ROSTER, GradeResult

ERROR, NOTE = "error", "note"


@dataclass(frozen=True)
class Problem:
    level: str  # ERROR or NOTE
    text: str

    def __str__(self) -> str:
        return f"{self.level}: {self.text}"


@dataclass(frozen=True)
class Column:
    """One lab's column; ``key`` is what the LMS calls it (a Canvas assignment id, a Moodle column
    name), or empty where the format has a default."""

    lab: Lab
    key: str = ""


@dataclass
class Row:
    entry: RosterEntry
    grades: dict[str, GradeResult] = field(default_factory=dict)  # lab id -> the graded result


@dataclass
class Sheet:
    columns: list[Column]
    rows: list[Row]
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.level == ERROR]


def parse_assignments(items: list[str], where: str = "--assignment") -> dict[str, str]:
    """``["toy_bpe=123", "gpt2_bpe"]`` -> ``{"toy_bpe": "123", "gpt2_bpe": ""}``; ``ValueError`` for
    a lab given twice with two different values."""
    mapping: dict[str, str] = {}
    for item in items:
        lab, _, key = (part.strip() for part in item.partition("="))
        if not lab:
            raise ValueError(f"{where} {item!r}: write LAB=ID, e.g. toy_bpe=12345")
        if mapping.get(lab, key) != key:
            raise ValueError(f"{where}: lab {lab} is given twice ({mapping[lab]} and {key})")
        mapping[lab] = key
    return mapping


def read_assignments_file(path: Path) -> list[str]:
    """A small mapping file: one ``LAB=ID`` a line; blank lines and ``#`` comments are skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as error:
        raise ValueError(f"the assignments file {path} cannot be read ({error.strerror})") from None
    return [
        line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()
    ]


def _columns(
    mapping: dict[str, str] | None, graded: list[GradeResult], problems: list[Problem]
) -> list[Column]:
    labs = all_labs()
    if mapping:
        unknown = [lab for lab in mapping if lab not in labs]
        for lab in unknown:
            problems.append(
                Problem(
                    ERROR,
                    f"there is no lab {lab!r} (in --assignment {lab}={mapping[lab]}): "
                    f"the labs are {', '.join(labs)}",
                )
            )
        columns = [Column(labs[lab], mapping[lab]) for lab in labs if lab in mapping]
    else:
        found = {result.lab for result in graded}
        columns = [Column(lab) for lab_id, lab in labs.items() if lab_id in found]
    by_key = defaultdict(list)
    for column in columns:
        if column.key:
            by_key[column.key].append(column.lab.lab_id)
    for key, lab_ids in by_key.items():
        if len(lab_ids) > 1:
            problems.append(
                Problem(
                    ERROR,
                    f"{' and '.join(lab_ids)} are all mapped to {key!r}: each lab needs an LMS "
                    f"column of its own, or one lab's grades would overwrite the other's",
                )
            )
    return columns


def build(
    results: list[GradeResult],
    roster: list[RosterEntry],
    mapping: dict[str, str] | None = None,
    skip_unmatched: bool = False,
) -> Sheet:
    """The sheet for ``roster``'s students and the labs of ``mapping`` (lab -> LMS key), or every
    graded lab when no mapping is given, with the problems found."""
    problems: list[Problem] = []
    graded = [result for result in results if result.graded]
    columns = _columns(mapping, graded, problems)
    exported = {column.lab.lab_id for column in columns}
    by_id = {entry.student_id: entry for entry in roster}
    by_key: dict[str, list[RosterEntry]] = defaultdict(list)
    entry: RosterEntry | None  # below, a result's roster entry if it has one
    for entry in roster:
        for key in entry.keys():
            by_key[key].append(entry)

    found: dict[tuple[str, str], list[GradeResult]] = defaultdict(list)
    unmatched: list[GradeResult] = []
    for result in sorted(graded, key=lambda r: (r.student_id, r.lab or "", r.file)):
        if result.lab not in exported:
            continue
        entry = by_id.get(result.student_id)
        if entry is None:
            candidates = list(
                {e.student_id: e for e in by_key.get(name_key(result.student_id), [])}.values()
            )
            if len(candidates) > 1:
                problems.append(
                    Problem(
                        ERROR,
                        f"{result.student_id} ({result.lab}, {Path(result.file).name}) fits "
                        f"several roster students ({', '.join(e.shown for e in candidates)}): "
                        f"grade with --roster so that the results carry the roster's student_id",
                    )
                )
                continue
            entry = candidates[0] if candidates else None
        if entry is None:
            unmatched.append(result)
            continue
        found[(entry.student_id, result.lab)].append(result)

    for (student, lab_id), several in found.items():
        if len(several) > 1:
            files = ", ".join(f"{Path(r.file).name} as {r.student_id}" for r in several)
            problems.append(
                Problem(
                    ERROR,
                    f"{by_id[student].shown} has {len(several)} graded results in {lab_id} "
                    f"({files}): grade the one that counts into a fresh OUT, or keep one "
                    f"of the files in the submissions folder",
                )
            )
    for result in unmatched:
        text = (f"{result.student_id} was graded in {result.lab} ({Path(result.file).name}) but is "
                "not on the roster")
        if skip_unmatched:
            problems.append(Problem(NOTE, f"{text}: left out (--skip-unmatched)"))
        else:
            problems.append(
                Problem(
                    ERROR,
                    f"{text}: add them to the roster (student_id, and name as the file name "
                    f"has it), or pass --skip-unmatched to leave them out",
                )
            )

    # Files of a lab that were not graded, for a student who
    # has no graded result there: said, not exported.
    for result in results:
        # missing: said per column below
        # a row of no known lab (``unknown``) is said whatever labs are exported
        if result.graded or result.status == MISSING or (
            result.lab not in exported and result.lab not in (None, "unknown")
        ):
            continue
        entry = by_id.get(result.student_id)
        if entry is None or (entry.student_id, result.lab) not in found:
            problems.append(
                Problem(
                    NOTE,
                    f"{result.student_id}'s {Path(result.file).name} ({result.lab}) was not "
                    f"graded ({result.status}): no grade from it",
                )
            )

    refused = [Path(r.file).name for r in results if r.status == NOT_ON_ROSTER]
    if refused:
        problems.append(
            Problem(
                NOTE,
                f"{len(refused)} file(s) are not exported because no roster row matched them "
                f"(grades.csv's not_on_roster rows, with the score of one graded before the "
                f"roster was given; add the students and grade again): "
                f"{', '.join(refused[:10])}{' ...' if len(refused) > 10 else ''}",
            )
        )
    rows = [
        Row(
            entry,
            {
                lab: found[(entry.student_id, lab)][0]
                for lab in exported
                if (entry.student_id, lab) in found
            },
        )
        for entry in roster
    ]
    for column in columns:
        missing = [row.entry.shown for row in rows if column.lab.lab_id not in row.grades]
        if missing:
            shown = ", ".join(missing[:10]) + (
                f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            )
            problems.append(
                Problem(
                    NOTE,
                    f"{column.lab.lab_id}: no grade for {len(missing)} roster student(s), "
                    f"left empty: {shown}",
                )
            )
    return Sheet(columns, rows, problems)


def graded_scores(result: GradeResult) -> tuple[float, float]:
    """A result's score and maximum: a sheet's rows hold graded results only, which have both."""
    if result.score is None or result.max_score is None:
        raise ValueError(f"{result.file} has no score: only graded results go on a sheet")
    return result.score, result.max_score


def points(value: float) -> str:
    """A score as an LMS reads it: at most two decimals, no trailing zeros (``9``, ``10.5``,
    ``2.33``)."""
    text = f"{round(float(value), 2):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def text_cell(text: str) -> str:
    """Free text (a name, a section, feedback) as a spreadsheet shows it: never as a formula."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text

"""Moodle: the gradebook's CSV import, and an assignment's offline grading worksheet with its zip of
feedback files, as Moodle's own code reads them.

**Gradebook import** (Grades → Import → CSV file; ``grade/import/csv``): a header row, one row per
student. On the import page the teacher maps one column to the user (*Map from* this column, *Map
to* ``username``, ``useremail`` or ``useridnumber``) and each other column to a grade item, a new
grade item, or the feedback of a grade item. A cell that is empty or ``-`` is "no grade": in a new
grade item it is skipped, and in an existing one Moodle sets that student's grade to none. So only
students with a grade in at least one exported lab get a row, and a lab a student has no grade in
gets ``-`` (the export says how many).

**Offline grading worksheet** (the assignment's *Download grading worksheet* / *Upload grading
worksheet*; ``mod/assign/feedback/offline``): Moodle finds the columns by their English names.
*Identifier* is ``Participant <id>``, the participant id that Moodle also writes in the names of
the files it exports; *Grade* is read as a number and skipped when empty, negative or above the
assignment's maximum; *Last modified (grade)* protects grades changed in Moodle later than it says
(``-``: any grade Moodle already has is kept unless the teacher allows the update); *Feedback
comments* becomes the student's feedback comment.

**Feedback files** (*Upload multiple feedback files in a zip*; ``mod/assign/feedback/file``):
each path part is split at ``_`` into ``<full name>_<participant id>_<plugin type>_<plugin name>``
and the files under it are the participant's feedback files.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

from autograder.grading.identity import identify
from autograder.lms.sheet import (
    ERROR,
    NOTE,
    Problem,
    Row,
    Sheet,
    graded_scores,
    points,
    text_cell,
)
from autograder.grading.result import GradeResult

WORKSHEET_HEADER = [
    "Identifier",
    "Full name",
    "Email address",
    "Status",
    "Grade",
    "Maximum Grade",
    "Grade can be changed",
    "Last modified (submission)",
    "Last modified (grade)",
    "Feedback comments",
]
# Moodle's 'hiddenuser' string: the Identifier is this and the participant id
PARTICIPANT = "Participant "
NO_GRADE = "-"


def _identity_value(row: Row, identity: str) -> str:
    entry = row.entry
    return {
        "email": entry.email,
        "username": entry.username or entry.login,
        "idnumber": entry.idnumber,
    }[identity]


def _summary_lines(result: GradeResult) -> list[str]:
    score, max_score = graded_scores(result)
    lines = [f"{result.lab}: {points(score)} / {points(max_score)}"]
    for part_id, part in result.parts.items():
        line = (f"{part_id}: {points(part.score)} / {points(part.max_score)} "
                f"{'✅' if part.passed else '❌'}")
        lines.append(f"{line} {part.message}" if part.message and not part.passed else line)
    lines += [f"From your grader ({a.cell}): {a.comment}" for a in result.adjustments if a.comment]
    return lines


def feedback_text(result: GradeResult) -> str:
    """The gradebook's feedback for one lab: plain lines (Moodle's own text format turns them into
    lines)."""
    return text_cell(html.escape("\n".join(_summary_lines(result)), quote=False))


def feedback_html(result: GradeResult) -> str:
    """The worksheet's *Feedback comments* (an HTML field in Moodle): the same lines, as a list."""
    first, *rest = [html.escape(line, quote=False) for line in _summary_lines(result)]
    return text_cell(f"<p>{first}</p><ul>" + "".join(f"<li>{line}</li>" for line in rest) + "</ul>")


def gradebook_table(
    sheet: Sheet, identity: str = "email", feedback: bool = False
) -> tuple[list[list[str]], list[Problem]]:
    """Moodle's gradebook import CSV: the identity column, then per lab its grade (and its
    feedback)."""
    problems = []
    if not sheet.columns:
        problems.append(
            Problem(
                ERROR,
                "no lab to export: no result is graded (see grades.csv), or --assignment "
                "named none of the graded labs",
            )
        )
    names = [column.key or column.lab.title for column in sheet.columns]
    header = [identity]
    for name in names:
        header += [name, f"{name} (feedback)"] if feedback else [name]
    if len(set(header)) < len(header):
        problems.append(
            Problem(
                ERROR,
                f"two columns would have one name ({', '.join(header)}): give each lab its "
                f"own column name with --assignment LAB=NAME",
            )
        )
    rows, empty = [header], 0
    for row in sheet.rows:
        if not row.grades:
            # no grade in any exported lab: no row, so that nothing is changed for this student
            continue
        value = _identity_value(row, identity)
        if not value:
            column_name = {"username": "username (or login)"}.get(identity, identity)
            problems.append(
                Problem(
                    ERROR,
                    f"roster line {row.entry.line}, {row.entry.shown}: no {column_name}, which "
                    f"Moodle would find the student by (--identity {identity})",
                )
            )
        cells = [value]
        for column in sheet.columns:
            result = row.grades.get(column.lab.lab_id)
            empty += result is None
            cells.append(points(graded_scores(result)[0]) if result else NO_GRADE)
            if feedback:
                cells.append(feedback_text(result) if result else "")
        rows.append(cells)
    if empty:
        problems.append(
            Problem(
                NOTE,
                f"{empty} cell(s) are '-' (no grade): imported into a NEW grade item they are "
                f"skipped, but into an EXISTING one Moodle removes that student's grade there; "
                f"to keep such grades, import one lab at a time (--assignment LAB)",
            )
        )
    return rows, problems


def participant_id(result: GradeResult, row: Row) -> str:
    """The student's participant id in the Moodle assignment: the one Moodle wrote in the name of
    the file it exported (``Ann Lee_501_assignsubmission_file_...``), else the roster's user_id."""
    path = Path(result.file)
    # the same reading as grading's: what the LMS wrote decides
    found = identify(Path(path.parent.name) / path.name)
    if found.source == "moodle" and found.user_id:
        return found.user_id
    return row.entry.user_id


def moodle_name(result: GradeResult, row: Row) -> str:
    path = Path(result.file)
    found = identify(Path(path.parent.name) / path.name)
    return (
        row.entry.name or (found.name if found.source == "moodle" else "") or row.entry.student_id
    )


def folder_name(full_name: str) -> str:
    """A full name as a path part Moodle's zip import can split at ``_``: no ``_`` (Moodle's own
    download does the same), no path separators, no control characters."""
    name = re.sub(r"[_/\\\x00-\x1f\x7f]+", " ", full_name).strip(" .")
    return " ".join(name.split()) or "student"


def _one_lab(sheet: Sheet, problems: list[Problem]):
    if len(sheet.columns) != 1:
        labs = ", ".join(c.lab.lab_id for c in sheet.columns) or "none"
        problems.append(
            Problem(
                ERROR,
                f"a grading worksheet is for one Moodle assignment, so one lab (labs here: "
                f"{labs}): pass --assignment LAB",
            )
        )
        return None
    return sheet.columns[0]


def worksheet(sheet: Sheet) -> tuple[list[list[str]], list[tuple[str, str]], list[Problem]]:
    """The worksheet's rows and the feedback zip's files (path in the zip, HTML), for one lab."""
    from autograder.reports.report import feedback_html as feedback_page

    problems: list[Problem] = []
    column = _one_lab(sheet, problems)
    rows = [list(WORKSHEET_HEADER)]
    files: list[tuple[str, str]] = []
    if column is None:
        return rows, files, problems
    lab = column.lab
    seen: dict[str, str] = {}
    for row in sheet.rows:
        result = row.grades.get(lab.lab_id)
        if result is None:
            continue  # Moodle skips a row with an empty grade: it would change nothing
        participant = participant_id(result, row)
        if not participant.isdigit():
            problems.append(
                Problem(
                    ERROR,
                    f"{row.entry.shown}: no Moodle participant id for {Path(result.file).name}: "
                    f"the worksheet needs the files as Moodle's 'Download all submissions' names "
                    f"them (Full Name_<participant id>_assignsubmission_file_...), or the id in "
                    f"the roster's user_id column",
                )
            )
            continue
        if participant in seen:
            problems.append(
                Problem(
                    ERROR,
                    f"participant {participant} is both {seen[participant]} and "
                    f"{row.entry.shown}: check the roster's user_id column",
                )
            )
            continue
        seen[participant] = row.entry.shown
        name = moodle_name(result, row)
        score, max_score = graded_scores(result)
        rows.append(
            [
                f"{PARTICIPANT}{participant}",
                text_cell(name),
                row.entry.email,
                "Submitted for grading",
                f"{float(score):.2f}",
                f"{float(max_score):.2f}",
                "Yes",
                NO_GRADE,
                NO_GRADE,
                feedback_html(result),
            ]
        )
        files.append(
            (
                f"{folder_name(name)}_{participant}_assignfeedback_file/{lab.lab_id}-feedback.html",
                feedback_page(result),
            )
        )
    return rows, files, problems

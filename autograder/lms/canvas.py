"""Canvas's gradebook import CSV (Grades → Import), as Canvas's own importer reads it.

Canvas's importer (``GradebookImporter`` in canvas-lms, the code behind Grades → Import) takes:

* a header row whose first columns are ``Student, ID, SIS User ID, SIS Login ID, Section`` (the
  row is refused unless it starts with *Student* and *ID* and the last of these is *Section*);
* then one column per assignment, named ``<title> (<assignment id>)``: the number in brackets
  picks the assignment (``Assignment.title_and_id``), the title is only shown;
* a row whose first cell contains ``Points Possible``: each assignment's maximum points;
* one row per student, found by *ID* (Canvas's user id), else *SIS User ID*, else *SIS Login ID*,
  else by name.

A student the kit has no grade for gets an empty cell. Canvas shows an empty cell as no change
where it has no grade either. A 0 would not be "nothing": it would be recorded as a real score,
count as a failing grade in the student's total, stand as if the student had handed in work that
earned nothing, and replace a grade Canvas already has (one given by hand for a late paper, say).
"""
from __future__ import annotations

from autograder.lms.sheet import ERROR, Problem, Sheet, graded_scores, points, text_cell

HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
# as Canvas's own export writes it; its importer looks for the words
POINTS_POSSIBLE = "    Points Possible"


def column_title(title: str, assignment_id: str) -> str:
    """``Byte-Pair Encoding on toy corpora (12345)``: how Canvas names an assignment's column."""
    return f"{title} ({assignment_id})"


def table(sheet: Sheet) -> tuple[list[list[str]], list[Problem]]:
    """The CSV's rows, and what stops them from being written."""
    problems = []
    for column in sheet.columns:
        if not column.key.isdigit():
            problems.append(
                Problem(
                    ERROR,
                    f"{column.lab.lab_id} has no Canvas assignment id"
                    f"{f' ({column.key!r} is not one)' if column.key else ''}: pass "
                    f"--assignment {column.lab.lab_id}=ID, ID being the number at the end of "
                    f"the assignment's address in Canvas (…/assignments/12345)",
                )
            )
    if not sheet.columns:
        problems.append(
            Problem(
                ERROR,
                "no lab to export: no result is graded (see grades.csv), or --assignment "
                "named none of the graded labs",
            )
        )
    rows = [HEADER + [column_title(c.lab.title, c.key) for c in sheet.columns],
            [POINTS_POSSIBLE, "", "", "", ""] + [points(c.lab.max_score) for c in sheet.columns]]
    for row in sheet.rows:
        entry = row.entry
        canvas_id = entry.canvas_id or entry.user_id
        if canvas_id and not canvas_id.isdigit():
            problems.append(
                Problem(
                    ERROR,
                    f"roster line {entry.line}, {entry.shown}: Canvas's ID {canvas_id!r} is "
                    f"not a number (canvas_id is Canvas's user id)",
                )
            )
        if not (canvas_id or entry.sis_user_id or entry.sis_login_id):
            problems.append(
                Problem(
                    ERROR,
                    f"roster line {entry.line}, {entry.shown}: no canvas_id, user_id, "
                    f"sis_user_id or sis_login_id, so Canvas could match this student by "
                    f"name only: add one of them",
                )
            )
        rows.append(
            [
                text_cell(entry.name or entry.student_id),
                canvas_id,
                entry.sis_user_id,
                entry.sis_login_id,
                text_cell(entry.section),
            ]
            + [
                points(graded_scores(row.grades[c.lab.lab_id])[0])
                if c.lab.lab_id in row.grades
                else ""
                for c in sheet.columns
            ]
        )
    return rows, problems

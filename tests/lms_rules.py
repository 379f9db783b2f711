"""Readers of LMS import files that follow the LMS's own rules, for the tests of autograder/lms/.

Each reader does what the LMS's importer does with the file, and fails where it would refuse it:

* :func:`canvas_gradebook`: Canvas's ``GradebookImporter`` (canvas-lms,
  app/models/gradebook_importer.rb): the header check (``Student``, ``ID``,
  ``SIS User ID``/``SIS Login ID``, last student column ``Section``), ``Assignment.title_and_id``
  (``/\\A(.*)\\s\\((\\d+)\\)\\z/``), the ``Points Possible`` row (first cell includes the words),
  rows that are only blanks skipped, a student found by ID.
* :func:`moodle_gradebook`: Moodle's ``gradeimport_csv_load_data``: a value is a number
  (``unformat_float``) or ``''``/``-`` for no grade; the mapped identity column finds the user.
* :func:`moodle_worksheet`: ``assignfeedback_offline_grade_importer`` (columns found by their names
  *Identifier*, *Grade*, *Last modified (grade)*; the Identifier less ``Participant `` is the
  participant id) and ``process_import_grades`` (a grade skipped when empty or negative).
* :func:`moodle_feedback_zip`: ``assignfeedback_file_zip_importer::is_valid_filename_for_import``
  (each path part exploded at ``_`` into at most 5 pieces; 4 or more pieces, a numeric participant
  id, the plugin type and name; hidden files ignored).
"""
from __future__ import annotations

import csv
import io
import re
import zipfile


def _php_explode(separator: str, text: str, limit: int) -> list[str]:
    """PHP's explode() with a positive limit: at most
    ``limit`` pieces, the last one holding the rest."""
    return text.split(separator, limit - 1)


def canvas_gradebook(data: bytes) -> dict:
    """{'assignments': {id: title}, 'points': {id: str}, 'students': {canvas id: {sis_user,
    sis_login, section, name, grades: {assignment id: str}}}} as Canvas's importer reads
    ``data``."""
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    header = rows[0]
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1], (
        "Canvas: invalid header row"
    )
    student_columns = 3
    assert re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3])
    student_columns += 2
    assert "Section" in header[student_columns - 1], (
        "Canvas: the last student column is not Section"
    )
    assignments = {}
    indices = {}
    for index, name in enumerate(header[student_columns:], start=student_columns):
        match = re.fullmatch(r"(.*)\s\((\d+)\)", name, re.S)
        assert match, (
            f"Canvas: column {name!r} names no assignment id (it would create a new assignment)"
        )
        assert match.group(2) not in assignments, (
            f"Canvas: two columns for assignment {match.group(2)}"
        )
        assignments[match.group(2)] = match.group(1)
        indices[match.group(2)] = index
    points, students = {}, {}
    for row in rows[1:]:
        if row and "Points Possible" in row[0]:
            points = {aid: row[i] for aid, i in indices.items()}
            continue
        if all(re.fullmatch(r"\s*(Muted|Manual Posting.*)?\s*", cell, re.I) for cell in row):
            continue
        student = row[1]
        assert student not in students, f"Canvas: student {student} twice"
        students[student] = {"name": row[0], "sis_user": row[2], "sis_login": row[3],
                             "section": row[4],
                             "grades": {aid: row[i].strip() for aid, i in indices.items()}}
    return {"assignments": assignments, "points": points, "students": students}


def unformat_float(value: str) -> float:
    """Moodle's unformat_float for an English site: a number with '.' as the decimal point."""
    assert re.fullmatch(r"-?\d+(\.\d+)?", value.strip()), (
        f"Moodle: {value!r} is not a grade (badgrade)"
    )
    return float(value)


def moodle_gradebook(data: bytes, identity: str) -> tuple[list[str],
                                                          dict[str, dict[str, float | None]], dict]:
    """(header, {user: {column: grade or None}}, {user: {column: feedback}}) with ``identity`` as
    the column mapped to the user; columns named "<x> (feedback)" are mapped to x's feedback."""
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    header = rows[0]
    assert header.count(identity) == 1
    grades, feedback = {}, {}
    for row in rows[1:]:
        if len(row) <= 1:
            continue
        record = dict(zip(header, row))
        user = record.pop(identity)
        assert user, "Moodle: a row with no user value is skipped: its grades would be lost"
        assert user not in grades
        grades[user], feedback[user] = {}, {}
        for column, value in record.items():
            if column.endswith(" (feedback)"):
                feedback[user][column[: -len(" (feedback)")]] = value
            else:
                grades[user][column] = None if value.strip() in ("", "-") else unformat_float(value)
    return header, grades, feedback


def moodle_worksheet(data: bytes) -> dict[str, dict]:
    """{participant id: {grade, name, email, modified,
    feedback}} as the offline grading importer reads it."""
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    header = rows[0]
    for needed in ("Identifier", "Grade", "Last modified (grade)"):
        assert needed in header, f"Moodle: no {needed!r} column: invalidgradeimport"
    found = {}
    for row in rows[1:]:
        record = dict(zip(header, row))
        identifier = record["Identifier"]
        participant = identifier[len("Participant "):]
        assert identifier.startswith("Participant ") and participant.isdigit(), identifier
        grade = record["Grade"].strip()
        found[participant] = {"grade": None if grade == "" else unformat_float(grade),
                              "name": record["Full name"], "email": record["Email address"],
                              "modified": record["Last modified (grade)"],
                              "feedback": record.get("Feedback comments", ""),
                              "max": record["Maximum Grade"]}
    return found


def moodle_feedback_zip(data: bytes, participants: set[str]) -> dict[str, list[tuple[str, bytes]]]:
    """{participant id: [(file name, content)]}: the files Moodle's zip import gives each
    participant. A file no participant gets fails: Moodle would silently ignore it."""
    given: dict[str, list[tuple[str, bytes]]] = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            name = info.filename.rsplit("/", 1)[-1]
            assert not name.startswith((".", "~")), (
                f"Moodle ignores the hidden file {info.filename}"
            )
            parts = ("/import/" + info.filename).split("/")
            for position, part in enumerate(parts):
                pieces = _php_explode("_", part, 5)
                if len(pieces) < 4 or not pieces[1].isdigit() or pieces[1] not in participants:
                    continue
                assert (pieces[2], pieces[3]) == ("assignfeedback", "file"), (
                    f"not a feedback file plugin: {part}"
                )
                rest = [pieces[4] if len(pieces) == 5 else ""] + parts[position + 1:]
                given.setdefault(pieces[1], []).append(("/".join(rest).lstrip("/"),
                                                        archive.read(info)))
                break
            else:
                raise AssertionError(f"Moodle's zip import would give {info.filename} to no "
                                     "participant")
    return given

"""``export``: bring OUT's reports up to date with the gradebook, and write an LMS's import file.

    bpe-labs export OUT        # grades.csv, feedback, class report: with formgrader's changes
    bpe-labs export OUT --format canvas --roster roster.csv --out canvas.csv \\
        --assignment toy_bpe=12345
    bpe-labs export OUT --format moodle --roster roster.csv --out moodle.csv \\
        [--identity email] [--feedback]
    bpe-labs export OUT --format moodle-worksheet --roster roster.csv --out worksheet.csv \\
        --assignment toy_bpe

Errors (see sheet.py) stop the export before anything is written, with exit code 2; notes are said
and the file is written. See docs/LMS.md.
"""
from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import tempfile
import zipfile
from pathlib import Path

FORMATS = ("canvas", "moodle", "moodle-worksheet")
KIT_FILES = (
    "grades.csv",
    "class_report.md",
    "scores.png",
    "gradebook.db",
    "nbgrader_config.py",
    "rows.json",
)


def add_export_command(commands) -> None:
    """The ``export`` sub-command, on the command line's sub-parsers."""
    parser = commands.add_parser(
        "export",
        help="bring OUT's grades.csv, feedback and class report up to date with changes made in "
        "formgrader; write Canvas's or Moodle's grade import file (docs/LMS.md)",
        description="Bring OUT's grades.csv, feedback pages and class report up to date with the "
                    "changes made by hand in formgrader; with --format, also write the file an "
                    "LMS's grade import takes. Formats, menu paths and the roster's columns: "
                    "docs/LMS.md.",
    )
    parser.add_argument("folder", metavar="OUT", help="a folder that `grade ... --out OUT` wrote")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        help="canvas: Canvas's gradebook import CSV; moodle: Moodle's gradebook import CSV; "
        "moodle-worksheet: a Moodle assignment's offline grading worksheet, and beside it a zip "
        "of feedback files (default: only bring OUT's own reports up to date)",
    )
    parser.add_argument(
        "--roster",
        help="the class list: CSV with student_id and the ids the LMS knows each "
        "student by (docs/LMS.md; needed with --format)",
    )
    parser.add_argument(
        "--out",
        dest="file",
        metavar="FILE",
        help="the file to write (needed with --format); "
        "moodle-worksheet also writes the zip of feedback "
        "files beside it: worksheet.csv -> "
        "worksheet-feedback.zip",
    )
    parser.add_argument(
        "--assignment",
        action="append",
        default=[],
        metavar="LAB=ID",
        help="a lab to export and its LMS column: canvas, the assignment id (the number at the end "
        "of the assignment's address); moodle, the column's name (default: the lab's title); "
        "moodle-worksheet, just LAB. Repeat for several labs (default: every graded lab)",
    )
    parser.add_argument(
        "--assignments",
        metavar="FILE",
        help="the same mapping in a file: one LAB=ID a line, # for comments",
    )
    parser.add_argument("--identity", choices=("email", "username", "idnumber"), default="email",
                        help="moodle: the roster column Moodle finds students by (default: email)")
    parser.add_argument("--feedback", action="store_true",
                        help="moodle: a feedback-text column after each lab's grade column")
    parser.add_argument(
        "--skip-unmatched",
        action="store_true",
        help="leave out graded students the roster does not have (they are listed) instead of "
        "stopping",
    )
    parser.add_argument(
        "--db",
        type=Path,
        help="nbgrader's gradebook, if grade was given --db (default: OUT/gradebook.db)",
    )
    parser.set_defaults(run=run_export)


def _fail(message: str) -> int:
    for line in message.split("\n"):  # a roster's problems: one line each
        print(f"error: {line}", file=sys.stderr)
    return 2


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        dir=path.parent, prefix=f".{path.name}.", delete=False
    ) as handle:
        handle.write(data)
    os.replace(handle.name, path)


def csv_bytes(rows: list[list[str]]) -> bytes:
    """UTF-8, comma-separated, every field quoted only where CSV needs it, CRLF line ends (RFC
    4180)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)
    return buffer.getvalue().encode("utf-8")


def zip_bytes(files: list[tuple[str, str]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files:
            archive.writestr(name, text.encode("utf-8"))
    return buffer.getvalue()


def refresh_reports(folder: Path, db_path: Path | None, results) -> None:
    """grades.csv, the feedback pages, the class report and formgrader's notebooks, for
    ``results``."""
    from autograder.reports import formgrader
    from autograder.batch.run import write_reports

    formgrader.write_course_or_say_why(folder, results, db_path)
    write_reports(results, folder)


def run_export(args: argparse.Namespace) -> int:
    from autograder.lms import canvas, moodle
    from autograder.grading.roster import read_roster
    from autograder.lms.sheet import ERROR, build, parse_assignments, read_assignments_file
    from autograder.lms.source import OutFolder

    folder = Path(args.folder)
    if args.format and not (args.roster and args.file):
        return _fail(
            f"--format {args.format} needs --roster ROSTER.csv (the class list) and --out FILE"
        )
    if args.file and Path(args.file).is_dir():
        return _fail(
            f"--out {args.file} is a folder: name the file to write, e.g. --out "
            f"{Path(args.file) / 'canvas.csv'}"
        )
    if args.file and Path(args.file).resolve() in {(folder / name).resolve() for name in KIT_FILES}:
        return _fail(
            f"--out {args.file} is one of the files grade writes in OUT: name another file, e.g. "
            f"--out {folder / 'lms-grades.csv'}"
        )
    source = OutFolder(folder, args.db)
    try:
        # the roster first: its mistakes (one line each) are said before any result is read
        roster = read_roster(Path(args.roster)) if args.roster else None
        results = source.results()
        items = list(args.assignment) + (
            read_assignments_file(Path(args.assignments)) if args.assignments else []
        )
        mapping = parse_assignments(items)
    except ValueError as error:
        return _fail(str(error))
    for note in source.notes:
        print(f"note: {note}", file=sys.stderr)
    refresh_reports(folder, args.db, results)
    changed = sum(1 for result in results if result.adjustments)
    print(f"{folder / 'grades.csv'}, the feedback pages and the class report are up to date"
          + (f" ({changed} submission(s) changed by hand in formgrader)" if changed else ""))
    if not args.format or roster is None:  # --format comes with --roster (checked above)
        return 0

    sheet = build(results, roster, mapping or None, skip_unmatched=args.skip_unmatched)
    files: list[tuple[str, str]] = []
    if args.format == "canvas":
        rows, problems = canvas.table(sheet)
    elif args.format == "moodle":
        rows, problems = moodle.gradebook_table(sheet, args.identity, args.feedback)
    else:
        rows, files, problems = moodle.worksheet(sheet)
    problems = sheet.problems + problems
    for problem in problems:
        print(problem, file=sys.stderr)
    if any(problem.level == ERROR for problem in problems):
        print(
            f"error: {args.file} was not written: {sum(p.level == ERROR for p in problems)} "
            "problem(s) above, each with its fix",
            file=sys.stderr,
        )
        return 2
    target = Path(args.file)
    try:
        _atomic_write(target, csv_bytes(rows))
        if args.format == "moodle-worksheet":
            archive = target.with_name(f"{target.stem}-feedback.zip")
            _atomic_write(archive, zip_bytes(files))
    except OSError as error:
        return _fail(
            f"{error.filename or target} could not be written ({error.strerror}): choose another "
            "--out"
        )
    print(f"wrote {target}: {len(rows) - (2 if args.format == 'canvas' else 1)} student row(s), "
          f"{', '.join(c.lab.lab_id for c in sheet.columns)}")
    if args.format == "moodle-worksheet":
        print(
            f"wrote {archive}: {len(files)} feedback file(s), for the assignment's 'Upload "
            "multiple feedback files in a zip'"
        )
    return 0

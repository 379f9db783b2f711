"""Any name, any file type, one row; and what the terminal shows is what grades.csv says (issue 23,
findings 4, 5 and 7, and the names that are not UTF-8).

One real batch through the command line: honest notebooks under a 255-byte name, a Latin-1 name
and a name carrying ANSI cursor sequences, beside a symbolic link to the course's solutions, a
FIFO, a hard link and a symbolic link to a folder outside. Each entry gets its row, the links and
the FIFO are never opened, the honest files are graded and recorded in the gradebook, and nothing
a student chose reaches the terminal as a control sequence."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.reports import gradebook, report
from autograder.grading.result import GradeResult
from bpe_labs import ROOT

UNTOUCHED = ROOT / "examples" / "submissions" / "toy-untouched.ipynb"
LONG = "a" * (255 - len("_toy_bpe.ipynb")) + "_toy_bpe.ipynb"  # the longest name Linux allows
LATIN1 = os.fsdecode(b"caf\xe9_toy_bpe.ipynb")  # an old LMS export's Latin-1 name, not UTF-8
ANSI = "zed\x1b[2J\x1b[H\x1b[8m_toy_bpe.ipynb"  # clears the screen, hides what follows
CORRECT_ID = "zed\\x1b[2J\\x1b[H\\x1b[8m"  # the id, escaped as names.escaped writes it


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    base = tmp_path_factory.mktemp("any-name")
    folder = base / "sub"
    folder.mkdir()
    for name in (LONG, LATIN1, ANSI):
        (folder / name).write_bytes(UNTOUCHED.read_bytes())
    # the answers, by a link
    (folder / "eve_toy_bpe.ipynb").symlink_to(ROOT / "solutions" / "toy_bpe.ipynb")
    os.mkfifo(folder / "fay_toy_bpe.ipynb")  # a read would block forever
    (base / "elsewhere.ipynb").write_bytes(UNTOUCHED.read_bytes())
    os.link(base / "elsewhere.ipynb", folder / "gus_toy_bpe.ipynb")  # a hard link to a file outside
    (folder / "hal").symlink_to(ROOT / "solutions", target_is_directory=True)  # a folder outside
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--out",
                           str(base / "out"), "--workers", "2"], capture_output=True, timeout=600)
    with open(base / "out" / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return base, done, rows


def test_every_entry_has_its_own_row_and_the_honest_files_are_graded(batch):
    """Was: a 255-byte name ended the batch (File name too long, no grades.csv); a symlink ended
    it before any file was graded (ValueError: not in the subpath); a Latin-1 name got
    grader_error (the gradebook refused it)."""
    base, done, rows = batch
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    by_name = {Path(row["file"]).name: row for row in rows}
    assert len(rows) == 7
    graded = {row["student_id"] for row in rows if row["status"] == "graded"}
    assert graded == {LONG[:-len("_toy_bpe.ipynb")], "caf\\xe9", CORRECT_ID}
    for name in ("eve_toy_bpe.ipynb", "fay_toy_bpe.ipynb", "gus_toy_bpe.ipynb", "hal"):
        assert by_name[name]["status"] == "not_a_regular_file", by_name[name]
    assert (
        "symbolic link" in by_name["eve_toy_bpe.ipynb"]["error"]
        and "hard link" in by_name["gus_toy_bpe.ipynb"]["error"]
    )
    # the link to the solutions earned nothing
    assert not any(row["score"] not in ("", "0") for row in rows)


def test_the_gradebook_holds_every_graded_name_faithfully(batch):
    base, _, rows = batch
    assert set(gradebook.total_scores(base / "out" / "gradebook.db")) == {
        (row["student_id"], "toy_bpe") for row in rows if row["status"] == "graded"}
    assert ("caf\\xe9", "toy_bpe") in gradebook.total_scores(base / "out" / "gradebook.db")


def test_result_and_feedback_files_have_safe_names_and_nothing_half_made_is_left(batch):
    base, _, _ = batch
    written = [path for path in (base / "out").rglob("*")]
    assert all(len(os.fsencode(path.name)) <= 160 for path in written)
    assert not [path for path in written if path.suffix == ".tmp"]
    assert len(list((base / "out" / "results").glob("*.json"))) == 3
    assert len(list((base / "out" / "feedback").rglob("*.html"))) == 7


def test_a_rerun_resumes_every_graded_name(batch):
    base, _, _ = batch
    again = subprocess.run([sys.executable, "-m", "autograder", "grade", str(base / "sub"), "--out",
                            str(base / "out"),
                            "--workers", "2", "--quiet"], capture_output=True, timeout=600)
    assert again.returncode == 0
    assert b"resuming: 3 results" in again.stderr


def test_what_the_terminal_shows_is_what_grades_csv_says(batch):
    """Was: a name with ANSI cursor sequences was printed
    as it was, and rewrote the table on screen."""
    base, done, rows = batch
    shown = done.stdout + done.stderr
    # no escape sequence, no byte that is not UTF-8
    assert b"\x1b" not in shown and b"\xe9" not in shown
    (ansi,) = [row for row in rows if row["student_id"] == CORRECT_ID]
    assert ansi["student_id"].encode() in done.stdout  # the table's row says what the csv says
    assert b"caf\\xe9" in done.stdout


def test_terminal_text_escapes_controls_bidi_and_undecodable_bytes():
    from autograder.grading.names import escaped

    trojan = "ann\u202e\u2066 11/11 \u2069\u202c"
    assert "\u202e" not in report.grades_text([GradeResult(trojan, "x.ipynb", status="empty_file")])
    assert escaped("tab\there\u0085") == "tab\\x09here\\x85"
    assert escaped("Zoë Ñúñez 李") == "Zoë Ñúñez 李"  # honest names as they are


@pytest.mark.parametrize("name", ["x" * 400, "a/b", "..", ".hidden", "名" * 200, LATIN1, "Ann Lee"])
def test_file_names_made_from_student_text_are_short_safe_and_unique(name):
    from autograder.grading.names import file_name

    made = file_name(name, ".json")
    assert (
        len(made.encode()) <= 160
        and "/" not in made
        and not made.startswith(".")
        and made.isprintable()
    )
    assert made.encode()  # encodable: no lone surrogate
    assert file_name(name + "x", ".json") != made

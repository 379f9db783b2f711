"""Roster hygiene (issue 33, 8): column names in any case (Canvas's own `Section`), and a duplicate
student_id or e-mail refused with one line per duplicate and exit 2, by `grade` and by `export`."""
from __future__ import annotations

import subprocess
import sys

import pytest

from autograder.lms import canvas
from autograder.grading.roster import read_roster
from autograder.lms.sheet import build
from autograder.grading.result import GradeResult

DUPLICATES = """student_id,name,email
s001,Ann Lee,ann@uni.edu
s002,Bob Ray,bob@uni.edu
s001,Ann Lee again,ann2@uni.edu
s003,Cat Kim,BOB@uni.edu
"""


def test_roster_columns_are_matched_whatever_their_case_and_section_reaches_canvas(tmp_path):
    """Was: a roster column `Section` (capital S, as
    Canvas's gradebook export writes it) was ignored."""
    path = tmp_path / "roster.csv"
    path.write_text("Student_ID,Name,User_ID,Section,SIS User ID\ns001,Ann Lee,101,Lab A,A-17\n",
                    encoding="utf-8")
    (entry,) = read_roster(path)
    assert (entry.student_id, entry.user_id, entry.section, entry.sis_user_id) == (
        "s001", "101", "Lab A", "A-17",
    )
    graded = GradeResult("s001", "ann_toy_bpe.ipynb", status="graded", lab="toy_bpe", score=11,
                         max_score=11)
    rows, _ = canvas.table(build([graded], read_roster(path), {"toy_bpe": "9001"}))
    header, student = rows[0], rows[2]
    assert (
        student[header.index("Section")] == "Lab A"
        and student[header.index("SIS User ID")] == "A-17"
    )


def test_a_duplicate_student_id_or_email_gets_one_line_each(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text(DUPLICATES, encoding="utf-8")
    with pytest.raises(ValueError) as refused:
        read_roster(path)
    lines = str(refused.value).splitlines()  # one line per duplicate
    assert len(lines) == 2, lines
    assert "line 4: student_id s001 is on line 2 already" in lines[0]
    assert "line 5: email bob@uni.edu is on line 3 already" in lines[1]


@pytest.mark.parametrize("command", ["grade", "export"])
def test_the_commands_refuse_a_roster_with_duplicates_in_one_line_each_and_exit_2(
    tmp_path, command
):
    """Was: `grade --roster` took a duplicate student_id without a word (and `export` named the
    first duplicate only, never a duplicate e-mail)."""
    (tmp_path / "roster.csv").write_text(DUPLICATES, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    # nothing to run: the roster is the point
    (tmp_path / "sub" / "ann_toy_bpe.ipynb").write_bytes(b"")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "rows.json").write_text("{}")
    arguments = {
        "grade": ["grade", str(tmp_path / "sub"), "--out", str(tmp_path / "new-out"), "--quiet"],
        "export": ["export", str(tmp_path / "out"), "--format", "canvas", "--out",
                   str(tmp_path / "canvas.csv")],
    }[command]
    done = subprocess.run([sys.executable, "-m", "autograder", *arguments, "--roster",
                           str(tmp_path / "roster.csv")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if "line 4" in line or "line 5" in line]
    assert len(lines) == 2 and all(line.startswith("error: ") for line in lines), done.stderr
    assert not (tmp_path / "new-out").exists() and not (tmp_path / "canvas.csv").exists()

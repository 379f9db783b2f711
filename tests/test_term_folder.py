"""One OUT folder for the term (issue 33, 1-4): a roster that arrives on a later run re-keys the
earlier results; every row of every batch stays (with its lab) until its file is removed or its
folder graded again; a notebook of another lab in a lab's folder; this batch and the term counted
apart. Real batches through the real command line, real kernels where a file is graded."""
from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bpe_labs import ROOT

EXAMPLES = ROOT / "examples" / "submissions"
TOY, GPT2 = EXAMPLES / "toy-correct.ipynb", EXAMPLES / "gpt2-untouched.ipynb"
ROSTER = ("student_id,user_id,name,email\ns001,101,leeann,ann.lee@uni.edu\n"
          "s002,102,bobby,bob@uni.edu\ns003,103,catz,cat@uni.edu\n")


def grade(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", *args, "--workers", "2",
                           "--quiet"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def rows_of(out: Path) -> list[dict]:
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def table(out: Path) -> set[tuple[str, str, str]]:
    return {(row["student_id"], row["lab"], row["status"]) for row in rows_of(out)}


@pytest.fixture
def canvas(tmp_path) -> Path:
    """A Canvas download of lab 1: leeann (user 101) full marks, mallory (user 777, not on the
    roster) full marks, and bobby's PDF."""
    folder = tmp_path / "canvas" / "toy_bpe"
    folder.mkdir(parents=True)
    (folder / "leeann_101_9001_toy_bpe.ipynb").write_bytes(TOY.read_bytes())
    (folder / "mallory_777_9002_toy_bpe.ipynb").write_bytes(TOY.read_bytes())
    (folder / "bobby_102_9003_report.pdf").write_bytes(b"%PDF-1.4 a report")
    (tmp_path / "roster.csv").write_text(ROSTER)
    return folder


def test_a_roster_given_on_a_later_run_rekeys_the_earlier_results_and_the_export_takes_them(
    tmp_path, canvas
):
    """Was (1): graded without --roster, then with it into the same OUT, the results stayed under
    the logins, every roster student was `missing` (the two who scored 11 too), and the export
    refused."""
    out, roster = tmp_path / "term", str(tmp_path / "roster.csv")
    grade(str(canvas), "--out", str(out))
    assert ("leeann", "toy_bpe", "graded") in table(out)
    grade(str(canvas), "--out", str(out), "--roster", roster)
    rows = {(row["student_id"], row["status"]): row for row in rows_of(out)}
    assert float(rows[("s001", "graded")]["score"]) == 11  # leeann is user 101: s001
    assert ("s001", "missing") not in rows and ("leeann", "graded") not in rows
    # unmatched: visible, with its score
    assert float(rows[("mallory", "not_on_roster")]["score"]) == 11
    assert {key for key in rows if key[1] == "missing"} == {("s002", "missing"),
                                                            ("s003", "missing")}
    again = rows_of(out)
    # once more: the same rows, none twice
    grade(str(canvas), "--out", str(out), "--roster", roster)
    assert sorted(map(sorted, map(dict.items, rows_of(out)))) == sorted(
        map(sorted, map(dict.items, again))
    )
    done = subprocess.run([sys.executable, "-m", "autograder", "export", str(out), "--format",
                           "canvas", "--roster",
                           roster, "--out", str(tmp_path / "canvas.csv"), "--assignment",
                           "toy_bpe=9001"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    sheet = list(csv.reader(open(tmp_path / "canvas.csv", encoding="utf-8")))
    score = {line[1]: line[-1] for line in sheet[2:]}
    assert score["101"] == "11"  # not an empty grade for a student who scored 11


def test_the_term_folder_keeps_every_row_of_every_batch_with_its_lab(tmp_path, canvas):
    """Was (2): after lab 2 into the same OUT, lab 1's student not on the roster (full marks),
    the PDF and lab 1's missing students were gone from grades.csv and the class report, and
    those rows had no lab. And (4): the summary counted this batch's files and the term's graded
    ones as one sentence."""
    out, roster = tmp_path / "term", str(tmp_path / "roster.csv")
    grade(str(canvas), "--out", str(out), "--roster", roster)
    lab1 = table(out)
    assert {("mallory", "toy_bpe", "not_on_roster"), ("s002", "toy_bpe", "not_a_notebook"),
            ("s003", "toy_bpe", "missing")} <= lab1
    lab2 = tmp_path / "canvas" / "gpt2_bpe"
    lab2.mkdir()
    (lab2 / "leeann_101_9101_gpt2_bpe.ipynb").write_bytes(GPT2.read_bytes())
    done = grade(str(lab2), "--out", str(out), "--roster", roster)
    after = table(out)
    assert lab1 <= after, lab1 - after  # every row of lab 1 is still there
    assert {
        ("s001", "gpt2_bpe", "graded"), ("s002", "gpt2_bpe", "missing"),
        ("s003", "gpt2_bpe", "missing"),
    } <= after
    assert all(row["lab"] for row in rows_of(out))  # every row names its lab
    # markdown's escapes
    report = (out / "class_report.md").read_text(encoding="utf-8").replace("\\", "")
    assert "mallory_777_9002_toy_bpe.ipynb" in report and "bobby_102_9003_report.pdf" in report
    summary = done.stdout.strip().splitlines()[-2]
    assert f"this batch: 1 file in {lab2}, 1 graded" in summary, summary
    assert "the term in" in summary and "2 graded" in summary, summary
    for files, graded in re.findall(r"(\d+) files? in [^,]+, (\d+) graded", done.stdout):
        assert int(graded) <= int(files), done.stdout  # never "32 files in X, 33 graded"


def test_a_notebook_of_another_lab_is_that_labs_hand_in_and_no_class_goes_missing_for_it(tmp_path):
    """Was (3): one lab-2 notebook in lab 1's folder gave every roster student a `missing` row
    for lab 2, and the student's own `missing` row for lab 1 did not say what they handed in
    instead."""
    folder = tmp_path / "canvas" / "toy_bpe"
    folder.mkdir(parents=True)
    (folder / "leeann_101_9001_toy_bpe.ipynb").write_bytes(TOY.read_bytes())
    (folder / "bobby_102_9002_toy_bpe.ipynb").write_bytes(GPT2.read_bytes())  # the wrong lab
    (tmp_path / "roster.csv").write_text(ROSTER)
    done = grade(str(folder), "--out", str(tmp_path / "out"), "--roster",
                 str(tmp_path / "roster.csv"))
    rows = {(row["student_id"], row["lab"], row["status"]): row
            for row in rows_of(tmp_path / "out")}
    assert set(rows) == {("s001", "toy_bpe", "graded"), ("s002", "gpt2_bpe", "graded"),
                         ("s002", "toy_bpe", "missing"), ("s003", "toy_bpe", "missing")}
    said = rows[("s002", "toy_bpe", "missing")]["error"]
    assert "bobby_102_9002_toy_bpe.ipynb (graded for gpt2_bpe)" in said, said
    assert "2 missing hand-ins" in done.stdout


def test_the_summary_counts_this_batch_and_the_term_apart(tmp_path):
    """Was (4): `32 files in canvas/toy_bpe, 33 graded`: the second number counted earlier
    batches too. Here week 2's one file is empty (not graded): the batch's count must say 0
    graded."""
    week1, week2 = tmp_path / "week1", tmp_path / "week2"
    week1.mkdir()
    week2.mkdir()
    (week1 / "ann_toy_bpe.ipynb").write_bytes(TOY.read_bytes())
    (week2 / "bob_toy_bpe.ipynb").write_bytes(b"")
    grade(str(week1), "--out", str(tmp_path / "out"))
    done = grade(str(week2), "--out", str(tmp_path / "out"))
    assert (
        f"this batch: 1 file in {week2}, 0 graded; the term in {tmp_path / 'out'}: 2 rows: 1 "
        "graded, 1 not graded"
        in done.stdout
    ), done.stdout

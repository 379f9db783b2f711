"""The README's instructor quickstart, run as written: every ```bash block of the section, in order,
in one shell, in a scratch folder holding what an instructor has at that point (an LMS's zip of
hand-ins, made here from the example submissions in Canvas's export names). Its ```csv block is the
roster file. A step added to the walkthrough (an export, a hand-in to a service) runs here at once;
add what it must produce to ``CHECKS``.

Also: the README stays a guide a newcomer finishes in ten minutes (its length), and what it says of
the command line is what the command line's help says."""
from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder.labs import get_lab
from autograder.grading.result import STATUSES
from bpe_labs import ROOT
from lms_rules import canvas_gradebook, moodle_gradebook

README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTION = "## Instructor quickstart: a term"
EXAMPLES = ROOT / "examples" / "submissions"
# What the students of the roster hand in, in roster order; the last one hands in nothing.
HAND_INS = ["toy-correct", "toy-untouched", "toy-tokenize-wrong-order"]


def walkthrough() -> str:
    return README.split(SECTION, 1)[1].split("\n## ", 1)[0]


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", walkthrough(), re.M | re.S)


def canvas_zip(roster: str, path: Path) -> None:
    """Canvas's *Download Submissions*: <login>_<user id>_<submission id>_<uploaded name>, a
    login with accents written as Canvas writes it: its UTF-8 bytes without the zip's UTF-8 flag
    (which Python's ``zipfile -e`` reads as cp437)."""
    students = list(csv.DictReader(io.StringIO(roster)))
    buffer, raw_names = io.BytesIO(), {}
    with zipfile.ZipFile(buffer, "w") as archive:
        for number, (student, case) in enumerate(zip(students, HAND_INS)):
            name = f"{student['name']}_{student['user_id']}_{9000 + number}_toy_bpe.ipynb"
            if not name.isascii():  # written under a same-length ASCII name, its bytes put in below
                stand_in = f"~{number}".ljust(len(name.encode("utf-8")), "~")
                raw_names[stand_in.encode("ascii")] = name.encode("utf-8")
                name = stand_in
            archive.writestr(name, (EXAMPLES / f"{case}.ipynb").read_bytes())
    data = buffer.getvalue()
    for stand_in, raw in raw_names.items():
        data = data.replace(stand_in, raw)
    assert raw_names, "the roster has a login with accents"
    path.write_bytes(data)


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    """The walkthrough's commands run in one shell, as an instructor would type them."""
    scratch = tmp_path_factory.mktemp("term")
    (roster,) = blocks("csv")
    (scratch / "roster.csv").write_text(roster, encoding="utf-8")
    canvas_zip(roster, scratch / "submissions.zip")
    script = ["set -euo pipefail"]
    for number, block in enumerate(blocks("bash"), start=1):
        script += [f"echo '== README block {number}' >&2", block]
    environment = {key: value for key, value in os.environ.items() if key != "BPE_LABS_HOME"}
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environment["PATH"]])
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=scratch, env=environment,
                          capture_output=True, text=True, timeout=600)
    return scratch, done, roster


def grades(scratch: Path) -> list[dict]:
    with open(scratch / "term" / "grades.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def roster_rows(scratch: Path) -> list[dict]:
    with open(scratch / "roster.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def canvas_matches_grades(scratch: Path) -> bool:
    """Canvas's import, read by Canvas's rules: each roster student found by their user id, with
    the score grades.csv has (an empty cell for the one who handed in nothing)."""
    scores = {row["student_id"]: row["score"] for row in grades(scratch)}
    students = canvas_gradebook((scratch / "canvas.csv").read_bytes())["students"]
    wanted = {row["user_id"]: scores[row["student_id"]] for row in roster_rows(scratch)}
    return {
        user: student["grades"]["12345"] for user, student in students.items()
    } == wanted and wanted["104"] == ""


def moodle_matches_grades(scratch: Path) -> bool:
    """Moodle's import, read by Moodle's rules: a row per
    graded student, found by email, with the score."""
    scores = {row["student_id"]: float(row["score"]) for row in grades(scratch)
              if row["status"] == "graded"}
    _, read, _ = moodle_gradebook((scratch / "moodle.csv").read_bytes(), "email")
    title = get_lab("toy_bpe").title
    return read == {row["email"]: {title: scores[row["student_id"]]} for row in roster_rows(scratch)
                    if row["student_id"] in scores} and len(read) == len(HAND_INS)


CHECKS = {  # what each step leaves behind (scratch folder -> true)
    "build": lambda s: "github/our-school/bpe-course/blob/main/notebooks/toy_bpe.ipynb"
                       in (s / "release" / "toy_bpe.ipynb").read_text(encoding="utf-8"),
    # the zip as it came, its names decoded (the accented login too): the logins of those who handed
    # in
    "collect": lambda s: {path.name.split("_")[0]
                          for path in (s / "term" / "unpacked" / "submissions").glob("*.ipynb")}
                         == {row["name"] for row in roster_rows(s)[:len(HAND_INS)]},
    "gradescope": lambda s: zipfile.is_zipfile(s / "toy_bpe-autograder.zip"),
    "grade": lambda s: sorted((r["student_id"], r["status"]) for r in grades(s)) == [
        ("s001", "graded"), ("s002", "graded"), ("s003", "graded"), ("s004", "missing")],
    "export to canvas": canvas_matches_grades,
    "export to moodle": moodle_matches_grades,
    "hand back": lambda s: (s / "term" / "feedback" / "s001" / "toy_bpe.html").is_file(),
}


def test_the_walkthrough_runs_as_written(term):
    scratch, done, _ = term
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "Colab badges point at https://github.com/our-school/bpe-course" in done.stdout


@pytest.mark.parametrize("step", sorted(CHECKS))
def test_each_step_leaves_what_the_readme_says(term, step):
    scratch, done, _ = term
    assert done.returncode == 0
    assert CHECKS[step](scratch)


def test_the_grades_are_the_examples_expected_points_and_the_report_names_the_missing_student(term):
    scratch, _, _ = term
    scores = {row["student_id"]: row["score"] for row in grades(scratch)}
    assert (scores["s001"], scores["s002"]) == ("11", "0")
    report = (scratch / "term" / "class_report.md").read_text(encoding="utf-8")
    assert "s004" in report.split("Missing", 1)[1]
    assert "toy_bpe.html" in term[1].stdout  # the hand-back step's listing


def test_the_readme_is_a_guide_a_newcomer_finishes_in_ten_minutes():
    words = len(README.split())
    assert words <= 1500, f"README.md has {words} words"
    for step in ("Build", "Publish", "Collect", "Grade", "Export", "Hand back"):
        assert re.search(rf"^### \d\. {step}", walkthrough(), re.M), step
    linked = set(re.findall(r"\]\((docs/[\w.]+\.md)", README))
    assert {"docs/GRADING.md", "docs/SECURITY.md", "docs/BENCHMARKS.md"} <= linked
    assert all((ROOT / path).is_file() for path in linked)
    # the build step names the badges' setting
    assert "BPE_LABS_HOME" in walkthrough().split("### 2.")[0]


def help_of(command: str) -> str:
    done = subprocess.run([sys.executable, "-m", "autograder", command, "--help"],
                          capture_output=True, text=True)
    return " ".join(done.stdout.split())


def test_what_the_readme_says_of_the_command_line_is_in_its_help():
    """Every option the README's commands use is one the command's help documents; every status it
    names is one the grader writes."""
    used = re.findall(r"bpe-labs (\w[\w-]*)((?: [^\n`]*)?)", README)
    for command, rest in used:
        for option in re.findall(r"(--[\w-]+)", rest):
            assert option in help_of(command), f"bpe-labs {command} {option}"
    named = set(re.findall(r"`([a-z_]+)`", walkthrough())) & (STATUSES | {"graded_", "missing"})
    assert {"graded", "missing", "not_a_notebook", "duplicate"} <= named <= STATUSES

"""Day one with a class of 300 (issue 27): no wrong result with exit 0, every file and every student
accounted for, a second batch into the same OUT, the command line's mistakes and help, the badges,
and the small things of the reports. Real batches, real kernels where a file is graded; files that
need no kernel (empty, not notebooks) where the point is the folder, not the grading."""
from __future__ import annotations

import argparse
import csv
import html
import importlib.util
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import mistune
import pytest

from autograder.reports import gradebook, report
from autograder.batch.run import grade_folder
from autograder.course import current
from autograder.labs import get_lab
from autograder.grading.result import GradeResult, PartScore
from bpe_labs import ROOT

EXAMPLES = ROOT / "examples" / "submissions"
CORRECT, UNTOUCHED = EXAMPLES / "toy-correct.ipynb", EXAMPLES / "toy-untouched.ipynb"


def command(*args: str, cwd: Path | None = None, **kwargs) -> subprocess.CompletedProcess:
    """The real program, as an instructor runs it."""
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        **kwargs,
    )


def rows_of(out: Path) -> list[dict]:
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def one_line_error(done: subprocess.CompletedProcess) -> str:
    """The error line a mistake must end with: no traceback, one ``error:`` line."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines and "error: " in lines[-1], done.stderr
    return lines[-1]


@pytest.fixture(scope="module")
def earlier_out(tmp_path_factory) -> Path:
    """An OUT folder holding an earlier batch (two files that need no kernel)."""
    base = tmp_path_factory.mktemp("earlier")
    (base / "sub").mkdir()
    for name in ("ann_toy_bpe.ipynb", "bob_toy_bpe.ipynb"):
        (base / "sub" / name).write_bytes(b"")
    grade_folder(base / "sub", base / "out", workers=0, progress=False)
    assert len(rows_of(base / "out")) == 2
    return base / "out"


# -- 1. a wrong or empty folder --------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["missing", "empty", "no notebook", "only zips", "a file"])
def test_a_wrong_or_empty_folder_stops_with_one_line_and_leaves_out_as_it_was(
    tmp_path, earlier_out, kind
):
    """Was: `0 files: grades in ...`, exit 0, and grades.csv emptied of the earlier batch."""
    folder = tmp_path / "sub"
    if kind != "missing" and kind != "a file":
        folder.mkdir()
    if kind == "no notebook":
        (folder / "ann_report.pdf").write_bytes(b"%PDF-1.4")
        (folder / "bob_lab.py").write_text("print(1)\n")
    elif kind == "only zips":
        with zipfile.ZipFile(folder / "ann_lab.zip", "w") as archive:
            archive.writestr("toy_bpe.ipynb", UNTOUCHED.read_bytes())
    elif kind == "a file":
        folder.write_bytes(UNTOUCHED.read_bytes())
    before = snapshot(earlier_out)
    done = command("grade", str(folder), "--out", str(earlier_out), "--quiet")
    assert done.returncode == 2
    line = one_line_error(done)
    assert (
        str(folder) in line
        and {
            "missing": "does not exist",
            "empty": "is empty",
            "no notebook": "no notebook",
            "only zips": "unpack them",
            "a file": "not a folder",
        }[kind]
        in line
    )
    assert snapshot(earlier_out) == before


def test_a_missing_folder_into_a_new_out_creates_nothing(tmp_path):
    done = command("grade", str(tmp_path / "no-such-folder"), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and not (tmp_path / "out").exists()


# -- 2. an nbgrader course folder ------------------------------------------------------------------

def test_an_nbgrader_course_folder_is_graded_one_student_per_folder(tmp_path):
    """Was: the course root's files were all given the lab's
    name as student id: one row graded, the rest duplicates."""
    course = tmp_path / "course"
    (course / "source" / "toy_bpe").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    (course / "source" / "toy_bpe" / "toy_bpe.ipynb").write_bytes(
        (ROOT / "solutions" / "toy_bpe.ipynb").read_bytes()
    )
    for student in ("ann", "bob"):
        (course / "submitted" / student / "toy_bpe").mkdir(parents=True)
        (course / "submitted" / student / "toy_bpe" / "toy_bpe.ipynb").write_bytes(
            UNTOUCHED.read_bytes()
        )
    done = command("grade", str(course), "--out", str(tmp_path / "out"), "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert "nbgrader course folder" in done.stderr
    assert sorted((row["student_id"], row["status"]) for row in rows_of(tmp_path / "out")) == [
        ("ann", "graded"), ("bob", "graded")]


# -- 3. every entry, every student -----------------------------------------------------------------

def test_every_entry_of_the_folder_has_a_row(tmp_path):
    """Was: a folder with a .ipynb, a .py, a .pdf and a .zip gave 1 row."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "ann_toy_bpe.ipynb").write_bytes(b"")
    (folder / "bob_toy_bpe.py").write_text("def tokenize(): pass\n")
    (folder / "cat_toy_bpe.pdf").write_bytes(b"%PDF-1.4")
    with zipfile.ZipFile(folder / "dan_toy_bpe.zip", "w") as archive:
        archive.writestr("toy_bpe.ipynb", UNTOUCHED.read_bytes())
    (folder / "eve" / "notes").mkdir(parents=True)
    (folder / "eve" / "notes" / "README").write_text("hi")
    results = grade_folder(folder, tmp_path / "out", workers=0, progress=False)
    table = {Path(row["file"]).name: row for row in rows_of(tmp_path / "out")}
    assert sorted(table) == sorted(
        ["ann_toy_bpe.ipynb", "bob_toy_bpe.py", "cat_toy_bpe.pdf", "dan_toy_bpe.zip", "README"]
    )
    assert len(results) == 5
    assert {name: row["status"] for name, row in table.items()} == {
        "ann_toy_bpe.ipynb": "empty_file",
        "bob_toy_bpe.py": "not_a_notebook",
        "cat_toy_bpe.pdf": "not_a_notebook",
        "dan_toy_bpe.zip": "not_a_notebook",
        "README": "not_a_notebook",
    }
    assert (
        "holding toy_bpe.ipynb" in table["dan_toy_bpe.zip"]["error"]
        and "unpack" in table["dan_toy_bpe.zip"]["error"]
    )
    assert table["cat_toy_bpe.pdf"]["student_id"] == "cat"


def test_every_roster_student_has_a_row_per_lab_and_the_report_names_the_missing(tmp_path):
    """Was: a student who handed in nothing had no row
    at all, and no report said who was missing."""
    (tmp_path / "roster.csv").write_text(
        "student_id,user_id,name\ns1,101,ann\ns2,102,bob\ns3,103,cat\n"
    )
    folder = tmp_path / "sub"  # a Canvas export
    folder.mkdir()
    (folder / "ann_101_9001_toy_bpe.ipynb").write_bytes(UNTOUCHED.read_bytes())
    (folder / "bob_102_9002_notes.pdf").write_bytes(b"%PDF-1.4")
    done = command(
        "grade",
        str(folder),
        "--out",
        str(tmp_path / "out"),
        "--roster",
        str(tmp_path / "roster.csv"),
        # a new folder for --db too
        "--workers",
        "1",
        "--quiet",
        "--db",
        str(tmp_path / "books" / "term.db"),
    )
    assert done.returncode == 0, done.stderr
    rows = sorted(
        (row["student_id"], row["lab"], row["status"]) for row in rows_of(tmp_path / "out")
    )
    # every row names its lab (issue 33): the PDF's is the batch's
    assert rows == [
        ("s1", "toy_bpe", "graded"),
        ("s2", "toy_bpe", "missing"),
        ("s2", "toy_bpe", "not_a_notebook"),
        ("s3", "toy_bpe", "missing"),
    ]
    class_report = (tmp_path / "out" / "class_report.md").read_text(encoding="utf-8")
    missing = class_report.split("Missing", 1)[1].split("\n\n")[1]
    assert "s2" in missing and "s3" in missing and "s1" not in missing
    assert "2 missing hand-ins" in done.stdout


# -- 4. a second batch into the same OUT -----------------------------------------------------------

def graded_pairs(out: Path) -> set[tuple[str, str]]:
    return {(row["student_id"], row["lab"]) for row in rows_of(out) if row["status"] == "graded"}


def test_grades_csv_and_the_class_report_describe_everything_the_gradebook_holds(tmp_path):
    """Was: grades.csv and the class report showed the latest batch only, and a file removed
    and graded again dropped its student from grades.csv but not from the gradebook."""
    out = tmp_path / "out"
    week1, week2 = tmp_path / "week1", tmp_path / "week2"
    week1.mkdir()
    week2.mkdir()
    (week1 / "ann_toy_bpe.ipynb").write_bytes(CORRECT.read_bytes())
    (week1 / "bob_toy_bpe.ipynb").write_bytes(UNTOUCHED.read_bytes())
    (week1 / "dan_toy_bpe.ipynb").write_bytes(b"{")  # not graded: never in the gradebook
    (week2 / "cat_toy_bpe.ipynb").write_bytes(UNTOUCHED.read_bytes())
    grade_folder(week1, out, workers=2, progress=False)
    rows = grade_folder(week2, out, workers=1, progress=False)
    # week 1's three rows stay (issue 33: dan's unreadable
    # file too, until it is removed or week 1 graded again)
    assert getattr(rows, "this_batch", None) == 1 and getattr(rows, "earlier", None) == 3
    expected = {("ann", "toy_bpe"), ("bob", "toy_bpe"), ("cat", "toy_bpe")}
    assert graded_pairs(out) == expected == set(gradebook.total_scores(out / "gradebook.db"))
    assert {
        row["student_id"]: float(row["score"]) for row in rows_of(out) if row["status"] == "graded"
    } == {"ann": 11.0, "bob": 0.0, "cat": 0.0}
    assert ("dan", "toy_bpe", "invalid_json") in {
        (row["student_id"], row["lab"], row["status"]) for row in rows_of(out)
    }
    assert "4 files, 3 graded" in (out / "class_report.md").read_text(encoding="utf-8")
    assert "earlier batches" in (out / "class_report.md").read_text(encoding="utf-8")

    (week1 / "bob_toy_bpe.ipynb").unlink()  # removed, and week 1 graded again
    (week1 / "dan_toy_bpe.ipynb").unlink()
    grade_folder(week1, out, workers=1, progress=False)
    assert graded_pairs(out) == expected == set(gradebook.total_scores(out / "gradebook.db"))
    assert "dan" not in {row["student_id"] for row in rows_of(out)}  # its row went with the file


# -- 9. the command line ---------------------------------------------------------------------------

MISTAKES = {  # arguments -> what the error line must say (its fix)
    "a lab misspelled (gradescope)": (["gradescope", "toy_bp"], "the labs are"),
    "a lab misspelled (execute-solutions)": (["execute-solutions", "toy_bp"], "the labs are"),
    "--out is a file": (["grade", str(EXAMPLES), "--out", "{file}"], "name a folder"),
    "a missing roster": (
        ["grade", str(EXAMPLES), "--out", "{tmp}/out", "--roster", "{tmp}/no-roster.csv"],
        "pass a CSV file",
    ),
    "a missing data folder": (
        ["grade", str(EXAMPLES), "--out", "{tmp}/out", "--data-dir", "{tmp}/no-data"],
        "point it at the corpora",
    ),
    "no command": ([], "required"),
    "build into a file": (["build", "--out", "{file}"], "name a folder"),
    "a missing data folder (gradescope)": (
        ["gradescope", "toy_bpe", "--data-dir", "{tmp}/no-data", "--out", "{tmp}/out/t.zip"],
        "check the paths",
    ),
    "a scheduler without TLS": (
        ["grade", str(EXAMPLES), "--out", "{tmp}/elsewhere", "--scheduler", "tcp://127.0.0.1:9"],
        "bpe-labs dask-certs",
    ),
    "TLS options without a scheduler": (
        ["grade", str(EXAMPLES), "--out", "{tmp}/elsewhere", "--tls-dir", "{tmp}"],
        "without --scheduler",
    ),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_a_mistake_gets_one_line_naming_the_fix_and_exit_2(tmp_path, mistake):
    """Was: tracebacks (a misspelled lab, --out naming a file),
    or nothing done with exit 0 (execute-solutions toy_bp)."""
    (tmp_path / "a-file").write_text("x")
    arguments, fix = MISTAKES[mistake]
    done = command(*[a.format(file=tmp_path / "a-file", tmp=tmp_path) for a in arguments],
                   env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
    assert done.returncode == 2
    assert fix in one_line_error(done)
    assert not (tmp_path / "out").exists()


def test_ctrl_c_says_how_far_it_got_and_exits_130_and_the_same_command_resumes(tmp_path):
    """Was: a raw KeyboardInterrupt traceback."""
    folder = tmp_path / "sub"
    folder.mkdir()
    for student in ("ann", "bob", "cat"):
        (folder / f"{student}_toy_bpe.ipynb").write_bytes(UNTOUCHED.read_bytes())
    arguments = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(folder),
        "--out",
        str(tmp_path / "out"),
        "--workers",
        "1",
    ]
    process = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               # a terminal's Ctrl-C goes to the whole process group
                               start_new_session=True)
    deadline = time.monotonic() + 120
    while not list((tmp_path / "out" / "results").glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    last = [line for line in err.splitlines() if line.strip()][-1]
    done = re.fullmatch(
        r"error: interrupted: done (\d) of 3 files; run the same command to resume", last
    )
    assert done and 1 <= int(done[1]) < 3, last
    again = subprocess.run(arguments, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "resuming" in again.stderr
    assert sorted(row["status"] for row in rows_of(tmp_path / "out")) == ["graded"] * 3


def options(parser) -> dict:
    """Command -> its argparse actions, for every command of the parser."""
    (commands,) = [
        action
        for action in parser._actions
        if action.choices and hasattr(action, "_name_parser_map")
    ]
    return {name: sub._actions for name, sub in commands.choices.items()}


def test_every_option_of_every_command_has_its_help():
    """Was: several --out options without help, gradescope
    --help listing neither the labs nor the defaults."""
    from autograder.cli import build_parser  # new: the parser alone, without running a command

    parser = build_parser(current(), "bpe-labs")
    undocumented = [
        f"{name} {action.dest}"
        for name, actions in options(parser).items()
        for action in actions
        if not action.help and action.dest != "help"
    ]
    assert undocumented == []
    with_defaults = [
        f"{name} {action.dest}"
        for name, actions in options(parser).items()
        for action in actions
        if action.default not in (None, False, argparse.SUPPRESS)
        and action.dest != "run"
        and "default" not in action.help
    ]
    assert with_defaults == []
    gradescope = " ".join(options(parser)["gradescope"][1].help.split())
    assert all(lab in gradescope for lab in current().lab_ids())


def test_top_help_opens_with_the_program_and_grade_help_states_the_readme_id_rule():
    """Was: `bpe-labs --help` opened with "``python -m autograder``:", and
    grade --help said the student id was the file name up to the first
    underscore (bob_zzz_toy_bpe.ipynb is bob_zzz, as the README says)."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "bpe-labs"), "--help"], capture_output=True, text=True
    )
    description = done.stdout.split("\n\n")[1]
    assert description.startswith("bpe-labs: grade a folder") and "``" not in done.stdout
    grade = " ".join(command("grade", "--help").stdout.split())
    assert "up to the first underscore" not in grade and "trailing _<lab>" in grade


# -- 10. badges ------------------------------------------------------------------------------------

def test_build_says_where_the_colab_badges_point(tmp_path, monkeypatch):
    """Was: build said nothing about the badges, which pointed at a
    placeholder repository. (The walkthrough of tests/test_readme.py builds
    with BPE_LABS_HOME set and reads the badges in the notebooks.)"""
    environment = {k: v for k, v in os.environ.items() if k != "BPE_LABS_HOME"}
    done = command("build", "--out", str(tmp_path / "default"), env=environment)
    assert done.returncode == 0, done.stderr
    assert (
        "Colab badges point at https://github.com/bpe-labs/bpe-labs" in done.stdout
        and "BPE_LABS_HOME" in done.stdout
    )
    from bpe_labs.build import badge_note  # what build prints, for a configured home

    monkeypatch.setenv("BPE_LABS_HOME", "our-school/bpe@fall")
    assert "Colab badges point at https://github.com/our-school/bpe (branch fall" in badge_note()


# -- 6. benchmarks ---------------------------------------------------------------------------------

def bench_module(name: str):
    folder = str(ROOT / "benchmarks")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_benchmark_prints_no_speed_ratio_for_a_run_that_did_not_grade_or_scored_otherwise():
    """Was: `5.94x` beside "our totals equal nbgrader's: NO", every one of ours a grader_error."""
    bench = bench_module("bench_grading")
    nbgrader = {"s01": 11.0, "s02": 0.0}
    failed = {"s01": ("grader_error", "", ()), "s02": ("grader_error", "", ())}
    different = {"s01": ("graded", "11", ()), "s02": ("graded", "3", ())}
    same = {"s01": ("graded", "11.0", ()), "s02": ("graded", "0", ())}
    rows = [
        ("nbgrader autograde", 1, (60.0, 50.0)),
        ("autograder", 1, (10.0, 9.0)),
        ("autograder", 2, (6.0, 9.0)),
        ("autograder", 4, (5.0, 9.0)),
    ]
    verdicts = {("autograder", 1): bench.why_not_comparable(same, nbgrader),
                ("autograder", 2): bench.why_not_comparable(different, nbgrader),
                ("autograder", 4): bench.why_not_comparable(failed, nbgrader)}
    table = bench.run_table(rows, verdicts, 60.0, 2).splitlines()
    assert "6.00x" in table[2]
    assert not re.search(r"\d+\.\d+x", table[3]) and "scores differ" in table[3]
    assert not re.search(r"\d+\.\d+x", table[4]) and "not graded" in table[4]
    summary = bench.summary_table(
        [
            {
                "lab": "toy_bpe",
                "nbgrader": 60.0,
                "ours": None,
                "equal": False,
                "why_not": verdicts[("autograder", 4)],
            }
        ]
    )
    assert not re.search(r"\d+\.\d+x", summary) and "not graded" in summary


# -- 12. small things ------------------------------------------------------------------------------

def rendered_text(markdown: str) -> str:
    """What a CommonMark renderer shows of ``markdown``: its HTML without tags, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", mistune.html(markdown))).strip()


@pytest.mark.parametrize(
    "text",
    [
        "it's done",
        "<b>bold</b> & [link](javascript:x)",
        "a_b*c*",
        "&#x27; &amp;",
        "1. not a list",
        "# not a heading",
        "x | y",
        "$x$ ~~y~~",
    ],
)
def test_class_report_text_renders_exactly_as_written(text):
    """Was: `'` written `&\\#x27;`, which a CommonMark renderer shows literally."""
    assert rendered_text(report.markdown_text(text)) == text


def result(student: str, scores: list, isolation: str = "landlock-abi7+seccomp") -> GradeResult:
    """A graded toy_bpe result with these part scores (the rest 0)."""
    lab = get_lab("toy_bpe")
    scores = scores + [0] * (len(lab.parts) - len(scores))
    parts = {
        p.part_id: PartScore(p.part_id, score, p.points) for p, score in zip(lab.parts, scores)
    }
    return GradeResult(
        student,
        f"{student}.ipynb",
        status="graded",
        lab="toy_bpe",
        score=sum(scores),
        max_score=lab.max_score,
        parts=parts,
        isolation=isolation,
    )


def test_one_of_anything_is_singular_in_the_class_report(tmp_path):
    """Was: "1 students", "1 files"."""
    report.class_report([result("ann", [2.0, 0])], tmp_path)
    text = (tmp_path / "class_report.md").read_text(encoding="utf-8")
    assert "1 file, 1 graded." in text and "| 1 student |" in text
    assert not re.search(r"\b1 (files|students)\b", text)


def test_scores_are_written_one_way_in_grades_csv(tmp_path):
    """Was: `0` in one row and `11.0` in the next (an int from one result, a float from another)."""
    report.write_grades_csv(
        [result("ann", [0, 0]), result("bob", [2.0, 2.0]), result("cat", [1.5, 2])],
        tmp_path / "grades.csv",
    )
    scores = {row["student_id"]: (row["score"], row["max_score"]) for row in rows_of(tmp_path)}
    assert scores == {"ann": ("0", "11"), "bob": ("4", "11"), "cat": ("3.5", "11")}


def test_the_terminal_table_says_the_isolation_once():
    """Was: the isolation string repeated on every row."""
    text = report.grades_text([result(name, [2.0]) for name in ("ann", "bob", "cat")])
    assert (
        text.count("landlock-abi7+seccomp") == 1
        and "isolation: landlock-abi7+seccomp (3 files)" in text
    )


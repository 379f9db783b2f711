"""Grades into Canvas and Moodle (autograder/lms/, `bpe-labs export`): every file is read back by
the LMS's own import rules (tests/lms_rules.py) and checked student by student, score by score,
file by file."""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from autograder.reports import gradebook
from autograder.batch.run import grade_folder
from autograder.cli import main
from autograder.labs import get_lab
from autograder.lms import canvas, moodle
from autograder.lms.command import csv_bytes, zip_bytes
from autograder.grading.roster import read_roster
from autograder.lms.sheet import ERROR, NOTE, build, parse_assignments, points
from autograder.grading.result import GRADED, GradeResult, PartScore
from bpe_labs import ROOT
from lms_rules import canvas_gradebook, moodle_feedback_zip, moodle_gradebook, moodle_worksheet

ROSTER_COLUMNS = ["student_id", "name", "email", "username", "idnumber", "user_id", "canvas_id",
                  "sis_user_id", "sis_login_id", "section"]


def graded(
    student: str, lab_id: str, lose: tuple[str, ...] = (), file: str | None = None
) -> GradeResult:
    """A graded result of ``lab_id`` with full points but for the parts in ``lose``."""
    lab = get_lab(lab_id)
    parts = {p.part_id: PartScore(p.part_id, 0 if p.part_id in lose else p.points, p.points,
                                  message="the merges differ from the expected ones"
                                  if p.part_id in lose else "")
             for p in lab.parts}
    return GradeResult(student, file or f"subs/{student}_{lab_id}.ipynb", status=GRADED, lab=lab_id,
                       score=sum(p.score for p in parts.values()), max_score=lab.max_score,
                       parts=parts)


def roster_file(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "roster.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ROSTER_COLUMNS, restval="")
        writer.writeheader()
        writer.writerows(rows)
    return path


CLASS = [
    {"student_id": "s1", "name": "Lee, Ann", "email": "ann@example.edu", "username": "alee",
     "idnumber": "1001",
     "canvas_id": "501", "sis_user_id": "SIS1", "sis_login_id": "alee", "section": "A",
     "user_id": "71"},
    {"student_id": "s2", "name": "Chen, Bo", "email": "bo@example.edu", "username": "bchen",
     "idnumber": "1002",
     "canvas_id": "502", "sis_user_id": "SIS2", "sis_login_id": "bchen", "section": "B",
     "user_id": "72"},
    {"student_id": "s3", "name": "Absent, Cy", "email": "cy@example.edu", "username": "cabsent",
     "idnumber": "1003",
     "canvas_id": "503", "sis_user_id": "SIS3", "sis_login_id": "cabsent", "section": "A",
     "user_id": "73"},
]


@pytest.fixture
def roster(tmp_path):
    return read_roster(roster_file(tmp_path, CLASS))


@pytest.fixture
def results():
    """Ann did both labs (one part wrong in gpt2_bpe),
    Bo only toy_bpe (two parts wrong), Cy nothing."""
    return [graded("s1", "toy_bpe"), graded("s1", "gpt2_bpe", lose=("merge",)),
            graded("s2", "toy_bpe", lose=("merge", "learn"))]


def texts(problems, level):
    return [p.text for p in problems if p.level == level]


def test_canvas_import_reads_every_student_score_and_the_points_possible(results, roster):
    sheet = build(results, roster, parse_assignments(["toy_bpe=9001", "gpt2_bpe=9004"]))
    rows, problems = canvas.table(sheet)
    assert not texts(sheet.problems + problems, ERROR)
    read = canvas_gradebook(csv_bytes(rows))
    assert read["assignments"] == {"9001": get_lab("toy_bpe").title,
                                   "9004": get_lab("gpt2_bpe").title}
    assert read["points"] == {"9001": "11", "9004": "10"}
    assert read["students"] == {
        "501": {"name": "Lee, Ann", "sis_user": "SIS1", "sis_login": "alee", "section": "A",
                "grades": {"9001": "11", "9004": "8"}},
        "502": {"name": "Chen, Bo", "sis_user": "SIS2", "sis_login": "bchen", "section": "B",
                "grades": {"9001": "6", "9004": ""}},
        "503": {"name": "Absent, Cy", "sis_user": "SIS3", "sis_login": "cabsent", "section": "A",
                "grades": {"9001": "", "9004": ""}},
    }


def test_a_roster_student_with_no_submission_gets_an_empty_cell_never_a_zero_and_is_named(
    results, roster
):
    sheet = build(results, roster, {"toy_bpe": "9001", "gpt2_bpe": "9004"})
    rows, _ = canvas.table(sheet)
    cy = next(row for row in rows if row[1] == "503")
    assert cy[5:] == ["", ""]
    notes = texts(sheet.problems, NOTE)
    assert any("toy_bpe" in note and "s3 (Absent, Cy)" in note and "empty" in note
               for note in notes)
    assert any("gpt2_bpe" in note and "s2 (Chen, Bo)" in note and "s3 (Absent, Cy)" in note
               for note in notes)


def test_a_submission_not_on_the_roster_stops_the_export_and_says_how_to_fix_it(results, roster):
    stranger = graded("zed", "toy_bpe", file="subs/zed_toy_bpe.ipynb")
    sheet = build(results + [stranger], roster, {"toy_bpe": "9001"})
    (error,) = texts(sheet.problems, ERROR)
    assert (
        "zed" in error
        and "toy_bpe" in error
        and "not on the roster" in error
        and "--skip-unmatched" in error
    )
    refused = GradeResult("zed", "subs/zed_toy_bpe.ipynb", status="not_on_roster",
                          message="no roster entry")
    assert any("zed_toy_bpe.ipynb" in n and "not_on_roster" in n
               for n in texts(build(results + [refused], roster).problems, NOTE))
    skipped = build(results + [stranger], roster, {"toy_bpe": "9001"}, skip_unmatched=True)
    assert not texts(skipped.problems, ERROR) and any("zed" in n
                                                      for n in texts(skipped.problems, NOTE))
    assert "zed" not in csv_bytes(canvas.table(skipped)[0]).decode()


def test_two_labs_mapped_to_one_column_are_refused(results, roster):
    sheet = build(results, roster, {"toy_bpe": "9001", "gpt2_bpe": "9001"})
    (error,) = texts(sheet.problems, ERROR)
    assert (
        "toy_bpe" in error
        and "gpt2_bpe" in error
        and "9001" in error
        and "column of its own" in error
    )
    named = build(results, roster, {"toy_bpe": "Lab 1", "gpt2_bpe": "Lab 1"})
    assert any("Lab 1" in e for e in texts(named.problems, ERROR))
    with pytest.raises(ValueError, match="toy_bpe is given twice"):
        parse_assignments(["toy_bpe=1", "toy_bpe=2"])


def test_a_lab_that_does_not_exist_or_has_no_canvas_id_is_refused(results, roster):
    sheet = build(results, roster, {"toy_bp": "9001"})
    assert any("no lab 'toy_bp'" in e and "toy_bpe" in e for e in texts(sheet.problems, ERROR))
    _, problems = canvas.table(build(results, roster, None))
    assert any("toy_bpe has no Canvas assignment id" in e and "--assignment toy_bpe=ID" in e
               for e in texts(problems, ERROR))


def test_canvas_needs_an_id_to_find_each_student_by(tmp_path, results):
    nameless = [dict(CLASS[0]),
                dict(CLASS[1], canvas_id="", user_id="", sis_user_id="", sis_login_id="")]
    _, problems = canvas.table(build(results, read_roster(roster_file(tmp_path, nameless)),
                                     {"toy_bpe": "9001"}))
    assert any("s2" in e and "match this student by name only" in e for e in texts(problems, ERROR))


def test_two_graded_results_for_one_student_and_lab_are_refused(results, roster):
    # s1's username
    again = graded("alee", "toy_bpe", lose=("tokenize",), file="later/alee_toy_bpe.ipynb")
    sheet = build(results + [again], roster, {"toy_bpe": "9001"})
    assert any("s1 (Lee, Ann) has 2 graded results in toy_bpe" in e
               for e in texts(sheet.problems, ERROR))


@pytest.mark.parametrize("identity, users", [("email", ["ann@example.edu", "bo@example.edu"]),
                                             ("username", ["alee", "bchen"]),
                                             ("idnumber", ["1001", "1002"])])
def test_moodle_gradebook_import_by_moodle_rules(results, roster, identity, users):
    sheet = build(results, roster, {"toy_bpe": "", "gpt2_bpe": "GPT-2 lab"})
    rows, problems = moodle.gradebook_table(sheet, identity, feedback=True)
    assert not texts(sheet.problems + problems, ERROR)
    header, grades, feedback = moodle_gradebook(csv_bytes(rows), identity)
    toy = get_lab("toy_bpe").title
    assert header == [identity, toy, f"{toy} (feedback)", "GPT-2 lab", "GPT-2 lab (feedback)"]
    ann, bo = users
    # Cy: no row at all
    assert grades == {ann: {toy: 11.0, "GPT-2 lab": 8.0}, bo: {toy: 6.0, "GPT-2 lab": None}}
    assert feedback[bo]["GPT-2 lab"] == "" and feedback[ann]["GPT-2 lab"].startswith("gpt2_bpe: 8 "
                                                                                     "/ 10")
    assert "merge: 0 / 2 ❌ the merges differ" in feedback[ann]["GPT-2 lab"]
    assert any("1 cell(s) are '-'" in note and "EXISTING" in note for note in texts(problems, NOTE))


def test_moodle_gradebook_needs_the_identity_column(tmp_path, results):
    no_email = [dict(CLASS[0], email=""), CLASS[1]]
    _, problems = moodle.gradebook_table(
        build(results, read_roster(roster_file(tmp_path, no_email))), "email"
    )
    assert any("s1" in e and "no email" in e for e in texts(problems, ERROR))


def test_moodle_worksheet_and_feedback_zip_by_moodle_rules(tmp_path):
    """Participant ids come from the names Moodle gave the
    files (a flat and a folder export), else the roster."""
    roster = read_roster(roster_file(tmp_path, [
        # the file says 501
        {"student_id": "s1", "name": "Ann Lee", "email": "ann@example.edu", "user_id": "9"},
        {"student_id": "s2", "name": "Bo_Chen", "email": "bo@example.edu"},
        {"student_id": "s3", "name": "Cy Roe", "email": "cy@example.edu", "user_id": "503"},
        {"student_id": "s4", "name": "Di Absent", "email": "di@example.edu", "user_id": "504"}]))
    results = [graded("Ann Lee", "toy_bpe",
                      file="subs/Ann Lee_501_assignsubmission_file_toy_bpe.ipynb"),
               graded("Bo_Chen", "toy_bpe", lose=("learn",),
                      file="subs/Bo_Chen_502_assignsubmission_file_/toy.ipynb"),
               graded("s3", "toy_bpe", lose=("merge",), file="subs/cy_toy_bpe.ipynb")]
    rows, files, problems = moodle.worksheet(build(results, roster, {"toy_bpe": ""}))
    assert not texts(problems, ERROR)
    read = moodle_worksheet(csv_bytes(rows))
    assert {p: (r["grade"], r["name"], r["email"], r["max"]) for p, r in read.items()} == {
        "501": (11.0, "Ann Lee", "ann@example.edu", "11.00"),
        "502": (8.0, "Bo_Chen", "bo@example.edu", "11.00"),
        "503": (9.0, "Cy Roe", "cy@example.edu", "11.00")}
    # a grade changed in Moodle is kept unless allowed
    assert all(r["modified"] == "-" for r in read.values())
    assert "learn: 0 / 3 ❌" in read["502"]["feedback"]
    given = moodle_feedback_zip(zip_bytes(files), set(read))
    assert {p: [name for name, _ in f] for p, f in given.items()} == {
        p: ["toy_bpe-feedback.html"] for p in read
    }
    assert (
        "<b>8 / 11</b>" in given["502"][0][1].decode()
        and "<b>9 / 11</b>" in given["503"][0][1].decode()
    )
    header = list(csv.reader([csv_bytes(rows).decode().splitlines()[0]]))[0]
    assert header[:6] == ["Identifier", "Full name", "Email address", "Status", "Grade",
                          "Maximum Grade"]


def test_a_file_name_imitating_moodle_gives_no_participant_id(tmp_path):
    """Canvas wrote the prefix, so the uploaded name's
    '_777_assignsubmission_file_' is the student's own text."""
    roster = read_roster(roster_file(tmp_path, [{"student_id": "mallory", "name": "mallory"}]))
    crafted = graded("mallory", "toy_bpe",
                     file="subs/mallory_1234_5678_x_777_assignsubmission_file_toy_bpe.ipynb")
    _, files, problems = moodle.worksheet(build([crafted], roster, {"toy_bpe": ""}))
    assert files == [] and any("no Moodle participant id" in e for e in texts(problems, ERROR))


def test_a_worksheet_is_for_one_lab(results, roster):
    _, _, problems = moodle.worksheet(build(results, roster))
    assert any("one Moodle assignment" in e and "--assignment LAB" in e
               for e in texts(problems, ERROR))


@pytest.mark.parametrize("value, shown",
                         [(9.0, "9"), (10.5, "10.5"), (2 / 3, "0.67"), (0, "0"), (11, "11")])
def test_scores_are_written_as_the_lms_reads_them(value, shown):
    assert points(value) == shown


# --- the command, on a folder the real autograder graded
# -------------------------------------------------

EXPORT_ROSTER = [
    {"student_id": "s1", "name": "Ann Lee", "email": "ann@example.edu", "canvas_id": "501",
     "section": "A"},
    {"student_id": "s2", "name": "Bo Chen", "email": "bo@example.edu", "canvas_id": "502",
     "section": "B"},
    {"student_id": "s3", "name": "Cy Absent", "email": "cy@example.edu", "canvas_id": "503",
     "section": "A"},
]


@pytest.fixture(scope="module")
def graded_out(tmp_path_factory):
    """Two toy_bpe notebooks as Moodle's 'Download all submissions' names them, graded for real."""
    folder = tmp_path_factory.mktemp("moodle-export")
    examples = ROOT / "examples" / "submissions"
    shutil.copy(examples / "toy-correct.ipynb",
                folder / "Ann Lee_601_assignsubmission_file_toy_bpe.ipynb")
    shutil.copy(examples / "toy-merge-overlaps.ipynb",
                folder / "Bo Chen_602_assignsubmission_file_toy_bpe.ipynb")
    out = tmp_path_factory.mktemp("out")
    results = grade_folder(folder, out, workers=2, progress=False)
    return out, {result.student_id: result for result in results}


def test_the_export_command_writes_each_format_from_a_graded_folder(graded_out, tmp_path, capsys):
    out, results = graded_out
    roster = roster_file(tmp_path, EXPORT_ROSTER)
    assert results["Bo Chen"].score < 11 and results["Ann Lee"].score == 11
    assert main(["export", str(out), "--format", "canvas", "--roster", str(roster), "--out",
                 str(tmp_path / "c.csv"), "--assignment", "toy_bpe=777"]) == 0
    students = canvas_gradebook((tmp_path / "c.csv").read_bytes())["students"]
    assert {cid: s["grades"]["777"] for cid, s in students.items()} == {
        "501": "11", "502": points(results["Bo Chen"].score), "503": ""}
    assert "s3 (Cy Absent)" in capsys.readouterr().err

    assert (
        main(
            [
                "export", str(out), "--format", "moodle", "--roster", str(roster), "--out",
                str(tmp_path / "m.csv"),
            ]
        )
        == 0
    )
    _, grades, _ = moodle_gradebook((tmp_path / "m.csv").read_bytes(), "email")
    title = get_lab("toy_bpe").title
    assert grades == {"ann@example.edu": {title: 11.0},
                      "bo@example.edu": {title: results["Bo Chen"].score}}

    assert main(["export", str(out), "--format", "moodle-worksheet", "--roster", str(roster),
                 "--out", str(tmp_path / "w.csv")]) == 0
    read = moodle_worksheet((tmp_path / "w.csv").read_bytes())
    assert {p: r["grade"] for p, r in read.items()} == {"601": 11.0,
                                                        "602": results["Bo Chen"].score}
    given = moodle_feedback_zip((tmp_path / "w-feedback.zip").read_bytes(), set(read))
    assert sorted(given) == ["601", "602"] and all(len(files) == 1 for files in given.values())
    page = given["602"][0][1].decode()
    assert "Bo Chen" in page and f"{results['Bo Chen'].score:g} / 11" in page


def test_the_export_command_refuses_with_one_line_each_and_writes_nothing(
    graded_out, tmp_path, capsys
):
    out, _ = graded_out
    short = roster_file(tmp_path, EXPORT_ROSTER[:1])
    target = tmp_path / "c.csv"
    assert main(["export", str(out), "--format", "canvas", "--roster", str(short), "--out",
                 str(target), "--assignment", "toy_bpe=777"]) == 2
    err = capsys.readouterr().err
    assert (
        "error: Bo Chen was graded in toy_bpe" in err
        and f"{target} was not written" in err
        and not target.exists()
    )
    assert "Traceback" not in err
    for argv, said in [(["export", str(tmp_path / "nowhere")], "is not a folder"),
                       (["export", str(tmp_path)], "holds no grading results"),
                       (["export", str(out), "--format", "canvas"], "needs --roster"),
                       (["export", str(out), "--format", "canvas", "--roster", str(short), "--out",
                         str(out / "grades.csv")], "one of the files grade writes"),
                       (["export", str(out), "--format", "canvas", "--roster",
                         str(tmp_path / "none.csv"), "--out", str(target)], "cannot be read")]:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err, (argv, err)
    assert not target.exists()


def test_a_result_file_edited_after_grading_is_not_exported(graded_out, tmp_path, capsys):
    out, _ = graded_out
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    stored = next(path for path in (copy / "results").glob("*.json") if "Bo Chen" in path.name)
    data = json.loads(stored.read_text())
    data["score"] = 11
    stored.write_text(json.dumps(data))
    assert main(["export", str(copy), "--format", "canvas", "--roster",
                 str(roster_file(tmp_path, EXPORT_ROSTER)),
                 "--out", str(tmp_path / "c.csv"), "--assignment", "toy_bpe=777"]) == 2
    assert "changed after grading" in capsys.readouterr().err and not (tmp_path / "c.csv").exists()


def test_the_example_roster_lists_every_bundled_example():
    """examples/roster.csv (docs/LMS.md's walkthrough) has a student for each example submission."""
    from bpe_labs.examples import load_cases

    names = {entry.name for entry in read_roster(ROOT / "examples" / "roster.csv")}
    missing = sorted({case["id"] for case in load_cases()} - names)
    assert not missing, f"add rows for {missing} to examples/roster.csv"


# --- grade, then export: the same rows
# ---------------------------------------------------------------------

TERM_ROSTER = [
    {"student_id": "s1", "name": "ann", "user_id": "101", "email": "ann@example.edu",
     "canvas_id": "501"},
    {"student_id": "s2", "name": "bob", "user_id": "102", "email": "bob@example.edu",
     "canvas_id": "502"},
    {"student_id": "s3", "name": "cat", "user_id": "103", "email": "cat@example.edu",
     "canvas_id": "503"},
    {"student_id": "s4", "name": "dan", "user_id": "104", "email": "dan@example.edu",
     "canvas_id": "504"},
]


def csv_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def term_out(tmp_path_factory):
    """Two batches into one OUT with a roster (Canvas's export names): week 1 has Ann's and Bob's
    notebooks and Cat's broken file, week 2 Bob's late resubmission; then Bob's first file and Cat's
    are removed from week 1 and week 1 is graded again. Dan hands in nothing."""
    base = tmp_path_factory.mktemp("term")
    roster = roster_file(base, TERM_ROSTER)
    examples = ROOT / "examples" / "submissions"
    week1, week2, out = base / "week1", base / "week2", base / "out"
    week1.mkdir()
    week2.mkdir()
    shutil.copy(examples / "toy-correct.ipynb", week1 / "ann_101_9001_toy_bpe.ipynb")
    shutil.copy(examples / "toy-untouched.ipynb", week1 / "bob_102_9002_toy_bpe.ipynb")
    (week1 / "cat_103_9003_toy_bpe.ipynb").write_bytes(b"{")  # invalid_json: never in the gradebook
    shutil.copy(examples / "toy-correct.ipynb", week2 / "bob_LATE_102_9010_toy_bpe.ipynb")
    for folder in (week1, week2):
        assert (
            main(
                [
                    "grade", str(folder), "--out", str(out), "--roster", str(roster), "--workers",
                    "2", "--quiet",
                ]
            )
            == 0
        )
    (week1 / "bob_102_9002_toy_bpe.ipynb").unlink()
    (week1 / "cat_103_9003_toy_bpe.ipynb").unlink()
    assert (
        main(
            [
                "grade", str(week1), "--out", str(out), "--roster", str(roster), "--workers", "1",
                "--quiet",
            ]
        )
        == 0
    )
    return out, roster


def test_export_reports_exactly_the_rows_grade_reported(term_out, tmp_path, capsys):
    """Was: export rewrote grades.csv from every file in OUT/results: the roster's missing rows
    went, Cat's invalid file and Bob's first notebook came back, and the Canvas export then
    refused Bob's two grades."""
    out, roster = term_out
    reported = csv_rows(out / "grades.csv")
    assert sorted(
        (r["student_id"], r["status"], r["score"], Path(r["file"]).name) for r in reported
    ) == [
        ("s1", "graded", "11", "ann_101_9001_toy_bpe.ipynb"),
        ("s2", "graded", "11", "bob_LATE_102_9010_toy_bpe.ipynb"), ("s3", "missing", "", ""),
        ("s4", "missing", "", ""),
    ]
    assert {(r["student_id"], r["lab"]) for r in reported if r["status"] == "graded"} == set(
        # the gradebook holds Bob's late notebook's 11
        gradebook.total_scores(out / "gradebook.db"))
    before = {name: (out / name).read_bytes() for name in ("grades.csv", "class_report.md")}
    capsys.readouterr()

    assert main(["export", str(out), "--format", "canvas", "--roster", str(roster), "--out",
                 str(tmp_path / "c.csv"),
                 "--assignment", "toy_bpe=777"]) == 0, capsys.readouterr().err
    assert {name: (out / name).read_bytes() for name in before} == before
    by_student = {r["student_id"]: r for r in reported}
    canvas_ids = {row["student_id"]: row["canvas_id"] for row in TERM_ROSTER}
    students = canvas_gradebook((tmp_path / "c.csv").read_bytes())["students"]
    assert {cid: s["grades"]["777"] for cid, s in students.items()} == {
        # a missing student: an empty cell
        canvas_ids[sid]: row["score"] for sid, row in by_student.items()}
    err = capsys.readouterr().err
    assert (
        "no grade for 2 roster student(s)" in err
        and "cat_103" not in err
        and "Traceback" not in err
    )

    assert (
        main(
            [
                "export", str(out), "--format", "moodle", "--roster", str(roster), "--out",
                str(tmp_path / "m.csv"),
            ]
        )
        == 0
    )
    _, grades, _ = moodle_gradebook((tmp_path / "m.csv").read_bytes(), "email")
    emails = {row["student_id"]: row["email"] for row in TERM_ROSTER}
    assert grades == {emails[sid]: {get_lab("toy_bpe").title: float(row["score"])}
                      for sid, row in by_student.items() if row["status"] == "graded"}
    assert main(["export", str(out)]) == 0
    assert {name: (out / name).read_bytes() for name in before} == before


def test_rows_grade_reported_that_were_edited_are_not_exported(term_out, tmp_path, capsys):
    out, roster = term_out
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    kept = json.loads((copy / "rows.json").read_text())
    # the missing students taken out
    kept["rows"] = [row for row in kept["rows"] if row["status"] != "missing"]
    (copy / "rows.json").write_text(json.dumps(kept))
    assert main(["export", str(copy), "--format", "canvas", "--roster", str(roster), "--out",
                 str(tmp_path / "c.csv"), "--assignment", "toy_bpe=777"]) == 2
    assert "changed after grading" in capsys.readouterr().err and not (tmp_path / "c.csv").exists()
    assert (copy / "grades.csv").read_bytes() == (out / "grades.csv").read_bytes()

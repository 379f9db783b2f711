"""Who handed a file in: LMS export names (Canvas, Moodle), a roster, and names a student chose."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from adversarial import correct_notebook, dump
from autograder.batch.run import grade_folder, plan
from autograder.cli import main
from autograder.grading.identity import read_roster
from autograder.grading.result import GradeResult


@pytest.fixture(scope="module")
def notebook_bytes() -> bytes:
    return dump(correct_notebook())


def write(folder: Path, names: list[str], content: bytes) -> Path:
    for name in names:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return folder


def planned(folder: Path, roster=None) -> tuple[dict[str, str], dict[str, GradeResult]]:
    """file name -> student id of the files to grade; file name -> row of the files not graded."""
    jobs, rows, _ = plan(folder, roster)
    return {path.name: student for path, student, _ in jobs}, {Path(row.file).name: row
                                                               for row in rows}


def test_a_suffix_cannot_push_a_students_file_aside(tmp_path, notebook_bytes):
    """Someone else's file named bob_zzz_toy_bpe.ipynb
    is not bob's, and bob's own file is graded."""
    graded, rows = planned(write(tmp_path, ["bob_toy_bpe.ipynb", "bob_zzz_toy_bpe.ipynb"],
                                 notebook_bytes))
    assert graded == {"bob_toy_bpe.ipynb": "bob", "bob_zzz_toy_bpe.ipynb": "bob_zzz"}
    assert rows == {}


def test_students_whose_names_share_a_prefix_are_not_merged(tmp_path, notebook_bytes):
    graded, rows = planned(write(tmp_path, ["ann_lee.ipynb", "ann_smith.ipynb"], notebook_bytes))
    assert graded == {"ann_lee.ipynb": "ann_lee", "ann_smith.ipynb": "ann_smith"}
    assert rows == {}


def test_two_canvas_users_with_one_name_are_told_apart_and_reported(tmp_path, notebook_bytes):
    folder = write(tmp_path, ["annlee_101_9001_toy_bpe.ipynb", "annlee_202_9002_toy_bpe.ipynb"],
                   notebook_bytes)
    graded, rows = planned(folder)
    assert graded == {"annlee_101_9001_toy_bpe.ipynb": "annlee-101",
                      "annlee_202_9002_toy_bpe.ipynb": "annlee-202"}
    jobs, _, _ = plan(folder)
    assert all("told apart by user id" in note for _, _, note in jobs)


def test_canvas_late_and_resubmitted_files_the_latest_is_graded(tmp_path, notebook_bytes):
    """Canvas: LATE_ after the login; a re-upload of the same name gets -1, -2 before .ipynb."""
    names = ["jdoe_1234_5678_toy_bpe.ipynb", "jdoe_LATE_1234_5678_toy_bpe-1.ipynb",
             "jdoe_LATE_1234_5678_toy_bpe-2.ipynb"]
    graded, rows = planned(write(tmp_path, names, notebook_bytes))
    assert graded == {"jdoe_LATE_1234_5678_toy_bpe-2.ipynb": "jdoe"}
    assert {name: row.status for name, row in rows.items()} == {names[0]: "duplicate",
                                                                names[1]: "duplicate"}
    jobs, _, _ = plan(tmp_path)
    assert jobs[0][2] == "late submission"


def test_moodle_flat_and_folder_exports(tmp_path, notebook_bytes):
    names = ["Ann Lee_501_assignsubmission_file_toy_bpe.ipynb",
             "Ann Smith_502_assignsubmission_file_/lab1.ipynb"]
    graded, rows = planned(write(tmp_path, names, notebook_bytes))
    assert graded == {"Ann Lee_501_assignsubmission_file_toy_bpe.ipynb": "Ann Lee",
                      "lab1.ipynb": "Ann Smith"}


ROSTER = """student_id,user_id,name,email
s001,101,leeann,ann.lee@example.edu
s002,202,Ann Smith,
s003,,Jo Doe,jdoe@example.edu
"""


def test_a_roster_maps_export_names_and_user_ids_to_student_ids(tmp_path, notebook_bytes):
    (tmp_path / "roster.csv").write_text(ROSTER)
    roster = read_roster(tmp_path / "roster.csv")
    names = ["leeann_101_9001_toy_bpe.ipynb",  # Canvas, by user id
             "Ann Smith_202_assignsubmission_file_toy_bpe.ipynb",  # Moodle, by user id
             # Moodle, by name (no user id in the roster)
             "Jo Doe_999_assignsubmission_file_toy_bpe.ipynb",
             "jdoe_toy_bpe.ipynb",  # a plain file, by the e-mail's login
             "mallory_777_1_toy_bpe.ipynb"]  # nobody on the roster
    graded, rows = planned(write(tmp_path / "sub", names, notebook_bytes), roster)
    assert graded == {names[0]: "s001", names[1]: "s002", names[3]: "s003"}
    assert rows[names[2]].status == "duplicate"  # Jo Doe's other file for the lab, found by name
    assert rows[names[4]].status == "not_on_roster" and "mallory" in rows[names[4]].message


# (file as the LMS exports it, whose it is): each uploaded name imitates bob's (user 777)
HIJACKS = [
    # Canvas, a Moodle-looking upload
    ("mallory_1234_5678_x_777_assignsubmission_file_toy_bpe.ipynb", "s_mal"),
    # Moodle folder, a Canvas-looking upload
    ("Mallory Smith_1234_assignsubmission_file_/bob_777_9999_toy_bpe.ipynb", "s_mal"),
    # Moodle folder, Moodle-looking
    ("Mallory Smith_1234_assignsubmission_file_/Bob_777_assignsubmission_file_toy_bpe.ipynb",
     "s_mal"),
    # Moodle flat, Moodle-looking
    ("Mallory Smith_1234_assignsubmission_file_Bob_777_assignsubmission_file_toy_bpe.ipynb",
     "s_mal"),
]


@pytest.mark.parametrize("name, owner", HIJACKS,
                         ids=["canvas", "moodle-folder-canvas", "moodle-folder-moodle",
                              "moodle-flat"])
def test_an_uploaded_name_cannot_take_a_classmates_row(tmp_path, notebook_bytes, name, owner):
    """From a red-team run: with a roster, a Canvas export whose uploaded name held
    "_777_assignsubmission_file_" was read as Moodle user 777, and graded as that classmate when
    they had not handed in (a duplicate row under their id when they had)."""
    (tmp_path / "roster.csv").write_text(
        "student_id,user_id,name,email\ns_bob,777,bob,\ns_mal,1234,mallory,\n"
    )
    roster = read_roster(tmp_path / "roster.csv")
    graded, rows = planned(write(tmp_path / "alone", [name], notebook_bytes), roster)
    assert graded == {Path(name).name: owner} and rows == {}
    graded, rows = planned(
        write(tmp_path / "both", [name, "bob_777_9999_toy_bpe.ipynb"], notebook_bytes), roster
    )
    assert graded == {Path(name).name: owner, "bob_777_9999_toy_bpe.ipynb": "s_bob"} and rows == {}


def test_a_roster_without_student_ids_is_refused(tmp_path):
    (tmp_path / "roster.csv").write_text("name,user_id\nAnn,1\n")
    with pytest.raises(ValueError, match="student_id"):
        read_roster(tmp_path / "roster.csv")


def test_the_grade_command_takes_a_roster(tmp_path):
    """Through the CLI, with files that need no kernel: the rows carry the roster's ids."""
    (tmp_path / "roster.csv").write_text(ROSTER)
    write(tmp_path / "sub", ["leeann_101_9001_toy_bpe.ipynb", "mallory_777_1_toy_bpe.ipynb"], b"")
    assert main(["grade", str(tmp_path / "sub"), "--out", str(tmp_path / "out"), "--roster",
                 str(tmp_path / "roster.csv"), "--workers", "1", "--quiet"]) == 0
    table = pd.read_csv(tmp_path / "out" / "grades.csv")
    assert dict(zip(table["student_id"], table["status"])) == {"s001": "empty_file",
                                                               "mallory": "not_on_roster"}


def test_grade_folder_without_roster_reports_the_collision(tmp_path):
    write(tmp_path / "sub", ["annlee_101_9001_toy_bpe.ipynb", "annlee_202_9002_toy_bpe.ipynb"], b"")
    results = grade_folder(tmp_path / "sub", tmp_path / "out", workers=0, progress=False)
    assert sorted(r.student_id for r in results) == ["annlee-101", "annlee-202"]
    assert "told apart by user id" in (tmp_path / "out" / "class_report.md").read_text()

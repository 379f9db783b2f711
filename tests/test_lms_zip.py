"""The LMS's submissions zip graded as it comes (issue 33, 5): Canvas's and Moodle's real naming,
with accents, with and without the zip's UTF-8 flag, a zip inside the zip; names matched to the
roster. The zips are built here with zipfile; a name without the UTF-8 flag is written as raw
bytes (cp437 or UTF-8, as LMSs and zip tools write them). Files that need no kernel: the point is
who handed in what."""
from __future__ import annotations

import csv
import io
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder.batch.run import plan

NOTEBOOK = b""  # an empty .ipynb: its row (empty_file) names its student without a kernel


def zip_bytes(entries: list[tuple[bytes | str, bytes]]) -> bytes:
    """A zip of ``entries``: a ``str`` name is written as zipfile writes it (the UTF-8 flag when
    it is not ASCII); a ``bytes`` name is written as those bytes, without the flag, as Canvas's
    and Moodle's own downloads and older zip tools write them."""
    buffer = io.BytesIO()
    placeholders = {}
    with zipfile.ZipFile(buffer, "w") as archive:
        for index, (name, data) in enumerate(entries):
            if isinstance(name, bytes):
                placeholder = f"~{index:04d}".ljust(len(name), "~").encode("ascii")
                assert len(placeholder) == len(name)
                placeholders[placeholder] = name
                archive.writestr(placeholder.decode("ascii"), data)
            else:
                archive.writestr(name, data)
    raw = buffer.getvalue()
    for placeholder, name in placeholders.items():  # in the local header and the central directory
        assert raw.count(placeholder) == 2
        raw = raw.replace(placeholder, name)
    return raw


def flags(raw: bytes) -> dict[str, bool]:
    from autograder.batch.unpack import decoded_name

    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        return {decoded_name(info): bool(info.flag_bits & 0x800) for info in archive.infolist()}


CANVAS_NAMES = [
    ("nunezmaria_501_9001_toy_bpe.ipynb", "s501"),  # ASCII login
    ("josé_502_9002_toy_bpe.ipynb".encode("utf-8"), "s502"),  # UTF-8 bytes, no flag (Canvas's own)
    ("zoë_503_9003_toy_bpe.ipynb", "s503"),  # the UTF-8 flag
    # cp437 bytes, no flag (an old zip tool)
    ("çelik_504_9004_toy_bpe.ipynb".encode("cp437"), "s504"),
]
MOODLE_NAMES = [
    ("María José Núñez_601_assignsubmission_file_toy_bpe.ipynb".encode("utf-8"), "s601"),  # no flag
    ("Zoë Ng_602_assignsubmission_file_/toy_bpe.ipynb", "s602"),  # folder export, UTF-8 flag
    ("Ça Ira_603_assignsubmission_file_toy_bpe.ipynb".encode("cp437"), "s603"),  # cp437, no flag
]
ROSTER = """student_id,user_id,name,email
s501,501,María Núñez,maria@uni.edu
s502,502,José Ruiz,jose@uni.edu
s503,503,Zoë Ng,zoe@uni.edu
s504,504,Çelik Ata,celik@uni.edu
s505,505,Dan Lee,dan@uni.edu
s601,601,María José Núñez,mjn@uni.edu
s602,602,Zoë Ng,zng@uni.edu
s603,603,Ça Ira,ca@uni.edu
"""


def grade(zip_path: Path, out: Path, *more: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(zip_path), "--out",
                           str(out),
                           "--workers", "1", "--quiet", *more], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("lms, names", [("canvas", CANVAS_NAMES), ("moodle", MOODLE_NAMES)])
def test_an_lms_zip_is_graded_as_it_comes_and_its_names_match_the_roster(tmp_path, lms, names):
    """Was: the README unpacked with `python -m zipfile -e`, which read a name without the UTF-8
    flag as cp437 (`María José Núñez` became `Mar├¡a Jos├⌐ N├║├▒ez`); `grade` took no zip at all."""
    entries: list[tuple[bytes | str, bytes]] = [(name, NOTEBOOK) for name, _ in names]
    raw = zip_bytes(entries)
    (tmp_path / "submissions.zip").write_bytes(raw)
    (tmp_path / "roster.csv").write_text(ROSTER, encoding="utf-8")
    rows = grade(tmp_path / "submissions.zip", tmp_path / "out", "--roster",
                 str(tmp_path / "roster.csv"))
    assert sum(flags(raw).values()) == 1  # one name with the UTF-8 flag, the others without
    handed_in = {row["student_id"] for row in rows if row["status"] != "missing"}
    assert handed_in == {student for _, student in names}, rows
    files = {Path(row["file"]).name for row in rows if row["file"]}
    assert "├" not in "".join(files) and "Ã" not in "".join(files)
    # without a roster, the names themselves are right (the batch's plan: no need to grade again)
    from autograder.batch.unpack import unpack_submissions

    jobs, planned, _ = plan(unpack_submissions(tmp_path / "submissions.zip", tmp_path / "alone"))
    students = {student for _, student, _ in jobs} | {row.student_id for row in planned}
    expected = {"canvas": {"nunezmaria", "josé", "zoë", "çelik"},
                "moodle": {"María José Núñez", "Zoë Ng", "Ça Ira"}}[lms]
    assert students == expected, students


def test_a_zip_inside_the_zip_is_unpacked_under_the_outer_name(tmp_path):
    inner = zip_bytes([("toy_bpe.ipynb", NOTEBOOK), ("__MACOSX/._toy_bpe.ipynb", b"junk")])
    outer = zip_bytes([("dan_505_9005_lab1.zip", inner), ("zoë_503_9003_toy_bpe.ipynb", NOTEBOOK),
                       ("../../escape.ipynb", NOTEBOOK)])
    (tmp_path / "submissions.zip").write_bytes(outer)
    (tmp_path / "roster.csv").write_text(ROSTER, encoding="utf-8")
    rows = grade(tmp_path / "submissions.zip", tmp_path / "out", "--roster",
                 str(tmp_path / "roster.csv"))
    by_student = {row["student_id"]: Path(row["file"]).name for row in rows
                  if row["status"] != "missing"}
    assert by_student["s505"] == "dan_505_9005_lab1_toy_bpe.ipynb"
    assert by_student["s503"] == "zoë_503_9003_toy_bpe.ipynb"
    assert (
        not (tmp_path / "escape.ipynb").exists()
        and not (tmp_path / "out" / "escape.ipynb").exists()
    )
    assert (tmp_path / "out" / "unpacked" / "submissions" / "escape.ipynb").exists()  # kept inside


def test_a_zip_with_no_notebook_is_refused_in_one_line_and_out_is_not_made(tmp_path):
    (tmp_path / "submissions.zip").write_bytes(zip_bytes([("notes.txt", b"hi")]))
    done = subprocess.run([sys.executable, "-m", "autograder", "grade",
                           str(tmp_path / "submissions.zip"), "--out",
                           str(tmp_path / "out"), "--quiet"], capture_output=True, text=True,
                          timeout=300)
    assert (
        done.returncode == 2
        and "holds no notebook" in done.stderr
        and "Traceback" not in done.stderr
    )
    assert not (tmp_path / "out").exists()

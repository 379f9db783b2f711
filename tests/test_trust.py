"""What the grader trusts: stored results only with the right hashes and checksum (resume), and
course files only as long as they are what they were when grading began."""
from __future__ import annotations

import json
import multiprocessing
import shutil
import stat
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

import autograder.batch.run as batch
from adversarial import CallLog
from bpe_labs import ROOT as REPO_ROOT
from autograder.batch.run import grade_folder, result_path
from autograder.batch.guard import CourseChanged, CourseGuard, course_files
from autograder.batch.resume import load_key
from autograder.grading.grade import grade_file as real_grade_file
from bpe_labs.course import COURSE


@pytest.fixture
def key(tmp_path, monkeypatch):
    """A resume key of this test's own, outside OUT."""
    monkeypatch.setenv("AUTOGRADER_RESUME_KEY", str(tmp_path / "keys" / "resume.key"))
    return tmp_path / "keys" / "resume.key"


@pytest.fixture
def folder(tmp_path) -> Path:
    """Files that need no kernel: their rows come from intake alone."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "amy_toy_bpe.ipynb").write_bytes(b"")
    (tmp_path / "sub" / "ben_toy_bpe.ipynb").write_text('{"cells": [')
    return tmp_path / "sub"


def counting(monkeypatch) -> CallLog:
    calls = CallLog(Path(tempfile.mkdtemp(prefix="calls-")) / "calls.txt")

    def grade_file(path, student_id, settings):
        calls.append(Path(path).name)
        return real_grade_file(path, student_id, settings)

    monkeypatch.setattr(batch, "grade_file", grade_file)
    return calls


def forge(out: Path, folder: Path, name: str, change) -> None:
    saved = result_path(out, folder / name, folder)
    result = json.loads(saved.read_text())
    change(result)
    saved.write_text(json.dumps(result))


def as_full_marks(result):
    result.update(status="graded", score=11.0, max_score=11.0, lab="toy_bpe")


@pytest.mark.parametrize("tamper",
                         ["edited", "checksum-recomputed-without-key", "checksum-removed"])
def test_resume_regrades_a_result_that_was_changed(tmp_path, folder, key, monkeypatch, tamper):
    out = tmp_path / "out"
    grade_folder(folder, out, workers=0, progress=False)
    assert key.exists() and out not in key.parents

    def change(result):
        as_full_marks(result)
        if tamper == "checksum-recomputed-without-key":
            import hashlib

            body = json.dumps(
                {k: v for k, v in result.items() if k != "checksum"}, sort_keys=True
            ).encode()
            result["checksum"] = hashlib.sha256(body).hexdigest()
        elif tamper == "checksum-removed":
            del result["checksum"]

    forge(out, folder, "amy_toy_bpe.ipynb", change)
    calls = counting(monkeypatch)
    results = {r.student_id: r for r in grade_folder(folder, out, workers=0, progress=False)}
    assert calls == ["amy_toy_bpe.ipynb"], "only the changed result is graded again"
    assert results["amy"].status == "empty_file" and results["amy"].score is None


def test_resume_trusts_an_intact_result_and_nothing_else(tmp_path, folder, key, monkeypatch):
    out = tmp_path / "out"
    grade_folder(folder, out, workers=0, progress=False)
    calls = counting(monkeypatch)
    grade_folder(folder, out, workers=0, progress=False)
    assert calls == [], "intact results are reused"
    # a result signed with another key (another grader's, or one a kernel made up) is not
    monkeypatch.setenv("AUTOGRADER_RESUME_KEY", str(tmp_path / "other.key"))
    grade_folder(folder, out, workers=0, progress=False)
    assert sorted(calls) == ["amy_toy_bpe.ipynb", "ben_toy_bpe.ipynb"]


def test_resume_regrades_when_the_course_changed(tmp_path, folder, key, monkeypatch):
    out = tmp_path / "out"
    course = tmp_path / "course.py"
    course.write_text("REFERENCE = 1\n")
    grade_folder(folder, out, workers=0, progress=False, course=CourseGuard([course], []))
    calls = counting(monkeypatch)
    course.write_text("REFERENCE = 2\n")
    grade_folder(folder, out, workers=0, progress=False, course=CourseGuard([course], []))
    assert sorted(calls) == ["amy_toy_bpe.ipynb", "ben_toy_bpe.ipynb"]


def copy_of_course(root: Path) -> Path:
    for relative in ("solutions/toy_bpe.ipynb", "notebooks/toy_bpe.ipynb", "bpe_labs/hidden.py",
                     "bpe_labs/reference/char_bpe.py", "bpe_labs/reference/__init__.py"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / relative, root / relative)
    return root


@pytest.mark.parametrize("attack",
                         ["reference-edited", "solution-replaced", "module-added", "file-removed"])
def test_a_batch_stops_when_a_course_file_changes_while_grading(tmp_path, folder, key, monkeypatch,
                                                                attack):
    """As a kernel that broke out would: change what the
    hidden tests import, after the first file."""
    root = copy_of_course(tmp_path / "course")
    # the copy's notebooks through the course's folders; its modules by path (the import system
    # finds the originals)
    copy = replace(COURSE, root=root, solutions=root / "solutions", notebooks=root / "notebooks",
                   trusted_modules=())
    modules = [root / "bpe_labs" / "hidden.py",
               *sorted((root / "bpe_labs" / "reference").glob("*.py"))]
    guard = CourseGuard(course_files(["toy_bpe"], copy) + modules,
                        [root / "bpe_labs" / "reference"])
    assert len(guard.files) == 5

    def grade_file(path, student_id, settings):
        result = real_grade_file(path, student_id, settings)
        reference = root / "bpe_labs" / "reference"
        if attack == "reference-edited":
            (reference / "char_bpe.py").write_text(
                (reference / "char_bpe.py").read_text() + "\nFORGED = True\n"
            )
        elif attack == "solution-replaced":
            (root / "solutions" / "toy_bpe.ipynb").write_text("{}")
        elif attack == "module-added":
            (reference / "sitecustomize.py").write_text("import os\n")
        else:
            (root / "bpe_labs" / "hidden.py").unlink()
        return result

    monkeypatch.setattr(batch, "grade_file", grade_file)
    out = tmp_path / "out"
    with pytest.raises(CourseChanged, match="course files changed"):
        grade_folder(folder, out, workers=0, progress=False, course=guard)
    assert not list((out / "results").glob("*.json")), "nothing graded after the change is kept"


def test_the_grade_command_refuses_to_go_on_after_a_course_change(tmp_path, folder, key,
                                                                  monkeypatch, capsys):
    from autograder.cli import main

    def changed(*args, **kwargs):
        raise CourseChanged("course files changed while grading, so no further result can be "
                            "trusted: x")

    monkeypatch.setattr(batch, "grade_folder", changed)
    assert main(["grade", str(folder), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert "course files changed" in capsys.readouterr().err


def test_graders_starting_together_share_one_whole_resume_key(tmp_path):
    """Four processes make the key at the same moment: each reads the same 64 hex digits (an
    empty or half-written key would sign results that the next run distrusts), owner-only."""
    path = tmp_path / "fresh" / "resume.key"
    context = multiprocessing.get_context("fork")
    start = context.Barrier(4)

    def make(queue):
        start.wait()
        queue.put(load_key(path))

    queue = context.Queue()
    processes = [context.Process(target=make, args=(queue,)) for _ in range(4)]
    for process in processes:
        process.start()
    keys = [queue.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(60)
    assert len(set(keys)) == 1 and len(bytes.fromhex(keys[0].decode())) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["resume.key"], "no file left beside it"

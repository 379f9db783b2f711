"""The engine's words that cross modules are enum members (``autograder/strenum.py``), never string
literals: a row's status, a submission's, a cell's kind and how it ran, an isolation mode and the
pieces of an isolation status. A comparison of one of these with a literal, anywhere in the code,
fails here (read with ``ast``); and a member written to a file reads back as the same member.

Each enum lives in the lowest module that owns its concept (docs/ENGINE.md, *The engine's words*).
"""
from __future__ import annotations

import ast
import csv
import io
import json
import pickle
import sqlite3
from pathlib import Path

import pytest

from autograder.grading.result import CellEvent, CellKind, GradeResult, Status, STATUSES, Verdict
from autograder.kernel.errors import CellStatus
from autograder.kernel.isolation import IsolationMode, LauncherSettings, Piece
from autograder.service.models import PENDING, SubmissionStatus

ROOT = Path(__file__).resolve().parent.parent

# Each enum, and what a value of its kind is read from in the code: attributes (``row.status``),
# variables, and calls whose result is one (``_role(cell)``, ``status_pieces(status)``). The
# kernel's own protocol is not among them: Jupyter's reply ``content.get("status") == "ok"`` and
# the codec's words (``outcome.kind == "timeout"``, ``kind == "missing"``) are other programs'
# words, read from their messages.
SUBJECTS: dict[type, tuple[set[str], set[str], set[str]]] = {
    # (attributes, variable names, functions)
    Status: ({"status"}, {"status", "state"}, set()),
    SubmissionStatus: ({"status"}, {"status", "state"}, set()),
    CellStatus: ({"status"}, {"status"}, set()),
    CellKind: ({"kind"}, {"role"}, {"_role"}),
    IsolationMode: ({"mode"}, {"mode"}, set()),
    Piece: ({"isolation"}, {"applied", "pieces", "status"}, {"status_pieces"}),
    Verdict: ({"verdict"}, {"verdict"}, set()),
}
# The Submit cell's helper runs in a student's notebook, which has none of the engine to import:
# its words are checked against SubmissionStatus below instead.
OUTSIDE = ("autograder/release/submit_helper.py",)


def _literals(node: ast.AST) -> list[str]:
    """The string literals ``node`` is (one, or a tuple, list or set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)
                and isinstance(e.value, str)]
    return []


def _reads(node: ast.AST, kind: type) -> bool:
    """Does ``node`` read a value of ``kind``, as SUBJECTS says?"""
    attributes, names, functions = SUBJECTS[kind]
    if isinstance(node, ast.Attribute):
        return node.attr in attributes
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Call):
        called = node.func
        name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
        return name in functions
    return False


def _words(kind: type) -> set[str]:
    return {member.value for member in kind}  # type: ignore[attr-defined]


def literal_comparisons(source: str, name: str = "<source>") -> list[str]:
    """Each comparison (``==``, ``!=``, ``in``, ``not in``) in ``source`` of a value of one of the
    enums with a string literal that is one of its words (or a tuple, list or set of them)."""
    found: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for index, operator in enumerate(node.ops):
            if not isinstance(operator, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
                continue
            left, right = sides[index], sides[index + 1]
            for kind in SUBJECTS:
                words = _words(kind)
                for subject, literal in ((left, right), (right, left)):
                    hit = any(text in words for text in _literals(literal))
                    if hit and _reads(subject, kind):
                        found.setdefault(f"{name}:{node.lineno}: {ast.unparse(node)}", []).append(
                            kind.__name__)
    return sorted(f"{where} ({' or '.join(sorted(set(kinds)))})" for where, kinds in found.items())


def _code() -> list[Path]:
    return [path for package in ("autograder", "bpe_labs") for path in
            sorted((ROOT / package).rglob("*.py"))
            if path.relative_to(ROOT).as_posix() not in OUTSIDE]


def test_no_word_is_compared_as_a_string_literal():
    found = [hit for path in _code() for hit in literal_comparisons(
        path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())]
    assert found == []


@pytest.mark.parametrize("source, kind", [
    ('if row.status == "graded": pass', "Status"),
    ('ok = sub.status != "ok"', "Status"),
    ('if step.kind not in ("given", "check"): pass', "CellKind"),
    ('if _role(cell) == "answer": pass', "CellKind"),
    ('if run.status == "timeout": pass', "CellStatus"),
    ('boundary = settings.mode == "boundary"', "IsolationMode"),
    ('has = "cgroup" in self.isolation', "Piece"),
    ('has = "seccomp" in status_pieces(status)', "Piece"),
    ('done = state in ("graded", "error")', "SubmissionStatus"),
    ('if part.verdict != "passed": pass', "Verdict"),
])
def test_the_scan_finds_a_literal_comparison(source, kind):
    (hit,) = literal_comparisons(source)
    assert kind in hit.rsplit("(", 1)[1]


@pytest.mark.parametrize("source", [
    'if row.status == Status.GRADED: pass',
    'if content.get("status") == "ok": pass',  # Jupyter's reply
    'if outcome.kind == "timeout": pass',  # the codec's word
    'if args.format == "canvas": pass',
])
def test_the_scan_leaves_members_and_other_programs_words(source):
    assert literal_comparisons(source) == []


def test_the_submit_cells_words_are_submission_statuses():
    """The helper in a student's notebook compares the API's ``status`` with literals: each is a
    SubmissionStatus value."""
    tree = ast.parse((ROOT / OUTSIDE[0]).read_text(encoding="utf-8"))
    status = {"state", "result.get('status')"}  # what it reads the API's status into
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(ast.unparse(side) in status for side in sides):
                used |= {text for side in sides for text in _literals(side)}
    assert used and used <= _words(SubmissionStatus)


# -- each enum's values, written and read back --------------------------------------------------

ENUMS = [Status, SubmissionStatus, CellKind, CellStatus, IsolationMode, Piece, Verdict]
MEMBERS = [member for kind in ENUMS for member in kind]  # type: ignore[attr-defined]


@pytest.mark.parametrize("member", MEMBERS, ids=str)
def test_a_member_is_written_as_its_value_and_read_back(member):
    kind, value = type(member), member.value
    assert str(member) == f"{member}" == "%s" % member == value
    assert {value: "row"}[member] == "row" and member in {value}  # Counter keys, sets of words
    assert json.dumps({"s": member}) == json.dumps({"s": value})
    assert kind(json.loads(json.dumps(member))) is member
    out = io.StringIO()
    csv.writer(out).writerow([member])
    assert out.getvalue() == f"{value}\r\n"
    assert kind(next(csv.reader(io.StringIO(out.getvalue())))[0]) is member
    database = sqlite3.connect(":memory:")
    database.execute("create table t (s text)")
    database.execute("insert into t values (?)", (member,))
    assert database.execute("select s, typeof(s) from t").fetchone() == (value, "text")
    assert pickle.loads(pickle.dumps(member)) is member


def test_the_words_on_disk_are_as_before():
    """What grades.csv, the results' JSON, the ledger, the service's table and the LMS exports
    hold: the same words as when they were strings (a rename here changes every file)."""
    assert sorted(_words(Status) - {"ok"}) == sorted([
        "graded", "grader_error", "worker_lost", "empty_file", "invalid_json", "not_a_notebook",
        "unknown_lab", "file_too_large", "duplicate", "not_on_roster", "no_notebook",
        "not_a_regular_file", "missing", "out_of_time"])
    assert STATUSES == frozenset(Status) - {Status.OK}
    assert _words(SubmissionStatus) == {"queued", "grading", "graded", "error"}
    assert PENDING == ("queued", "grading")
    assert _words(CellKind) == {"given", "answer", "added", "check", "feedback"}
    assert _words(CellStatus) == {"ok", "error", "timeout", "died", "skipped"}
    assert _words(IsolationMode) == {"boundary", "fence"}


def test_a_result_file_reads_back_as_members():
    result = GradeResult("ada", "ada.ipynb", status=Status.NOT_ON_ROSTER,
                         cells=[CellEvent("cell 3", CellKind.ADDED, CellStatus.TIMEOUT)])
    text = json.dumps(result.to_json())
    data = json.loads(text)
    assert (data["status"], data["cells"][0]["kind"], data["cells"][0]["status"]) == (
        "not_on_roster", "added", "timeout")
    again = GradeResult.from_json(data)
    assert again == result and again.status is Status.NOT_ON_ROSTER
    assert again.cells[0].kind is CellKind.ADDED and again.cells[0].status is CellStatus.TIMEOUT


def test_an_old_result_file_still_reads():
    """Written by an earlier grader, as plain strings (one kernel per notebook came later: the
    skipped feedback run's cell kind)."""
    old = {"student_id": "ada", "file": "a.ipynb", "status": "graded", "score": 1.0,
           "max_score": 1.0, "cells": [{"cell": "-", "kind": "feedback", "status": "skipped"}]}
    result = GradeResult.from_json(old)
    assert result.graded and result.cells[0].kind is CellKind.FEEDBACK
    old["cells"][0]["kind"] = "hint"
    with pytest.raises(Exception, match=r"result.cells\[0\].kind: 'hint' is not a cell kind"):
        GradeResult.from_json(old)


def test_ok_is_never_a_row_s_status():
    from autograder.grading.result import MalformedResult

    with pytest.raises(MalformedResult, match="not a status"):
        GradeResult.from_json({"student_id": "ada", "file": "a.ipynb", "status": "ok"})
    with pytest.raises(MalformedResult, match="'GRADED' is not a status"):
        GradeResult.from_json({"student_id": "ada", "file": "a.ipynb", "status": "GRADED"})


def test_the_launcher_settings_carry_the_mode_as_its_value():
    settings = LauncherSettings(IsolationMode.FENCE, 1 << 30).with_boundary(workdir="/work")
    assert json.loads(settings.encode())["mode"] == "boundary"
    assert LauncherSettings.decode(settings.encode()).mode is IsolationMode.BOUNDARY
    with pytest.raises(ValueError):
        LauncherSettings.decode(json.dumps({"mode": "open", "memory_bytes": 1}))

"""The typed grading result and its one converter to and from JSON data (results/*.json, resume)."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from autograder.grading.result import (GRADED, STATUSES, CellEvent, GradeResult, IntegrityEvent,
                               MalformedResult, PartScore)
from autograder.batch.resume import sign, signed, trusted, unsigned

KEY = b"a test key"


def graded() -> GradeResult:
    return GradeResult(
        "amy", "/sub/amy_toy_bpe.ipynb", status=GRADED, lab="toy_bpe", sha256="ab" * 32, score=9.5,
        max_score=11,
        parts={"merge": PartScore("merge", 2, 2, "all checks passed", "✅ merge('a b') == 'ab'"),
               "learn": PartScore("learn", 0.5, 3.0,
                                  "on a hidden test input, your code raised KeyError")},
        integrity=[IntegrityEvent("moved", "learn_solution", "the cell stood elsewhere")],
        cells=[CellEvent("cell 9", "added", "error", "NameError: name 'x' is not defined")],
        seconds=7.25, isolation="landlock-abi7+netns+seccomp+uid", restarts=1, kernels=1,
        identity="late", sources="cd" * 32)


def test_a_result_survives_json_text_unchanged():
    result = graded()
    again = GradeResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again == result
    assert isinstance(again.parts["merge"], PartScore) and isinstance(again.cells[0], CellEvent)
    # numbers keep their type: an int score is written as 2 in grades.csv, not 2.0
    assert type(again.parts["merge"].score) is int and type(again.max_score) is int


def test_an_ungraded_row_round_trips_with_its_empty_fields():
    for status in sorted(STATUSES):
        result = GradeResult("ben", "/sub/ben.ipynb", status=status, message="the file is empty")
        assert GradeResult.from_json(json.loads(json.dumps(result.to_json()))) == result


def test_a_result_file_written_before_the_typed_result_still_reads():
    """The JSON the grader wrote before (no isolation,
    restarts or traceback in an ungraded row) loads."""
    old = {"student_id": "cal", "file": "/sub/cal_toy_bpe.ipynb", "sha256": "ef" * 32, "lab": None,
           "status": "empty_file", "message": "the file is empty", "score": None, "max_score": None,
           "parts": {},
           "integrity": [], "cells": [], "seconds": 0.01, "sources": "cd" * 32, "identity": ""}
    result = GradeResult.from_json(old)
    assert (result.status, result.isolation, result.restarts, result.kernels, result.traceback) == (
        "empty_file", None, 0, 0, None,
    )
    # a part entry as check.PartResult wrote it, before visible_check was added
    part = {"part_id": "merge", "score": 0, "max_score": 2, "message": "not yet"}
    assert (
        GradeResult.from_json({**old, "parts": {"merge": part}}).parts["merge"].visible_check == ""
    )


@pytest.mark.parametrize("change, named", [
    (lambda d: d.pop("student_id"), "missing field(s) student_id"),
    (lambda d: d.update(grade=11), "unknown field(s) grade"),
    (lambda d: d.update(score="11"), "result.score: expected float, got str"),
    (lambda d: d.update(score=True), "result.score: expected float, got bool"),
    (lambda d: d.update(status="hacked"), "'hacked' is not a status"),
    (lambda d: d.update(parts=[]), "result.parts: expected an object, got list"),
    (lambda d: d["parts"]["merge"].pop("max_score"),
     "result.parts.merge: missing field(s) max_score"),
    (lambda d: d["parts"]["merge"].update(score=None),
     "result.parts.merge.score: expected float, got NoneType"),
    (lambda d: d["integrity"].append("moved"), "result.integrity[1]: expected an object, got str"),
    (lambda d: d["cells"][0].update(error=None),
     "result.cells[0].error: expected str, got NoneType"),
    (lambda d: d.update(restarts=1.5), "result.restarts: expected int, got float"),
])
def test_a_malformed_result_is_rejected_naming_the_field(change, named):
    data = graded().to_json()
    change(data)
    with pytest.raises(MalformedResult) as raised:
        GradeResult.from_json(data)
    assert named in str(raised.value)


def test_json_that_is_not_an_object_is_rejected():
    for data in (None, [], "graded", 3):
        with pytest.raises(MalformedResult, match="expected an object"):
            GradeResult.from_json(data)


def test_a_signed_result_file_is_trusted_only_intact_and_for_its_file_and_course():
    result = graded()
    data = json.loads(json.dumps(signed(result, KEY)))
    assert trusted(data, KEY, result.sha256, result.sources) == result
    assert unsigned(data) == result
    assert trusted(data, b"another key", result.sha256, result.sources) is None
    assert trusted(data, KEY, "00" * 32, result.sources) is None, "the file changed since"
    assert trusted(data, KEY, result.sha256, "00" * 32) is None, "the course changed since"
    assert trusted({**data, "score": 11}, KEY, result.sha256, result.sources) is None
    assert trusted({**data, "checksum": "é"}, KEY, result.sha256, result.sources) is None


def test_a_signed_but_malformed_result_file_is_graded_again():
    """A result file our key signed that this version cannot
    read (a field since renamed) is not reused."""
    data = graded().to_json()
    data["grade"] = data.pop("score")
    sign(data, KEY)
    assert trusted(data, KEY, data["sha256"], data["sources"]) is None
    with pytest.raises(MalformedResult, match="unknown field"):
        unsigned(data)


def test_replace_gives_a_new_result_and_leaves_the_old_one():
    result = graded()
    moved = replace(result, identity="told apart by user id")
    assert result.identity == "late" and moved.identity == "told apart by user id"
    with pytest.raises(AttributeError):
        result.score = 11  # frozen: a result is changed only by making a new one

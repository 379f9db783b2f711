"""The bundled example submissions, graded by the real autograder, get exactly their stated scores.

Reference: each case's ``expected`` in ``examples/<lab>.yaml``, written from the bug the case
plants (a correct submission gets every point, an untouched one none).
"""
import csv
import re

import pytest
from bs4 import BeautifulSoup

from autograder.reports import gradebook
from autograder.grading.result import Verdict
from bpe_labs.examples import load_cases
from autograder.labs import HIDDEN_TESTS, all_labs, get_lab

CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_example_gets_its_exact_expected_score(case, graded_examples):
    _, results = graded_examples
    result = results[case["id"]]
    assert result.status == "graded", result.message
    scores = {part_id: part.score for part_id, part in result.parts.items()}
    assert scores == {part_id: float(points) for part_id, points in case["expected"].items()}
    assert result.score == sum(case["expected"].values())
    assert result.integrity == [], "an honest submission must yield an empty integrity report"
    for part_id, shown in (case.get("visible_check") or {}).items():
        # The mistake is one the task's example can show: the student saw a ❌ with this hint.
        assert shown in result.parts[part_id].visible_check, result.parts[part_id].visible_check


def test_a_speed_verdict_is_the_one_the_check_showed(graded_examples):
    """One speed verdict: a part graded 0 as too slow had its visible check
    print ❌ in the same grading run, and a check's ✅ is never followed by
    "too slow" (the check and the hidden test judge speed by one rule)."""
    _, results = graded_examples
    disagreements = [
        (student, part_id, part.visible_check.strip()[:120])
        for student, result in results.items()
        for part_id, part in result.parts.items()
        if part.verdict is Verdict.TOO_SLOW
        and ("❌" not in part.visible_check or "✅" in part.visible_check)
    ]
    assert not disagreements
    assert any(
        part.verdict is Verdict.TOO_SLOW
        for result in results.values()
        for part in result.parts.values()
    )


def test_every_lab_has_correct_untouched_and_wrong_examples(example_cases):
    for lab in all_labs().values():
        mine = [case for case in example_cases.values() if case["lab"] == lab.lab_id]
        full = [c for c in mine if sum(c["expected"].values()) == lab.max_score]
        zero = [c for c in mine if c.get("fill") == "none" and sum(c["expected"].values()) == 0]
        partial = [c for c in mine if 0 < sum(c["expected"].values()) < lab.max_score]
        assert full and zero and len(partial) >= 2, (
            f"{lab.lab_id}: needs a correct, an untouched and two wrong examples"
        )
        assert {p.part_id for p in lab.parts} == set(mine[0]["expected"]), (
            f"{lab.lab_id}: expected must list every part"
        )


def test_grades_csv_has_one_row_per_submission_and_a_column_per_part(graded_examples):
    out, results = graded_examples
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(row["student_id"] for row in rows) == sorted(results)
    for row in rows:
        lab = get_lab(row["lab"])
        assert float(row["score"]) == results[row["student_id"]].score
        assert float(row["max_score"]) == lab.max_score
        assert sum(float(row[part.part_id]) for part in lab.parts) == float(row["score"])


def test_gradebook_holds_the_same_scores(graded_examples):
    out, results = graded_examples
    in_db = gradebook.total_scores(out / "gradebook.db")
    assert in_db == {(sid, r.lab): r.score for sid, r in results.items()}


def hidden_test_fragments() -> set[str]:
    """Lines found only in hidden-test blocks (long enough to be distinctive)."""
    fragments = set()
    for lab in all_labs().values():
        visible = "\n".join(
            HIDDEN_TESTS.sub("", cell.source) for cell in lab.solution_notebook().cells
        )
        for part in lab.parts:
            fragments |= {line.strip() for line in part.hidden_tests.splitlines()
                          if len(line.strip()) > 25 and line.strip() not in visible}
    return fragments


def test_feedback_shows_points_and_reasons_but_no_hidden_tests(graded_examples):
    out, results = graded_examples
    fragments = hidden_test_fragments()
    assert fragments
    pages = list((out / "feedback").rglob("*.html"))
    assert len(pages) == len(results)
    for page in pages:
        text = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").get_text()
        for forbidden in ("BEGIN HIDDEN", "Traceback", 'File "', "bpe_labs.reference", "_rng"):
            assert forbidden not in text, f"{page}: {forbidden!r}"
        leaked = [f for f in fragments if f in text and not re.fullmatch(r'[\w\s,."\'()]*', f)]
        assert not leaked, f"{page} shows hidden-test source: {leaked[:2]}"
    wrong = BeautifulSoup(
        (out / "feedback" / "toy-merge-overlaps" / "toy_bpe.html").read_text(encoding="utf-8"),
        "html.parser",
    ).get_text()
    assert (
        "never overlapping" in wrong
        and "0 / 2" in wrong
        and "got ['aa', 'aa', 'a', '</w>']" in wrong
    )


def test_class_report_names_the_most_missed_parts(graded_examples):
    out, _ = graded_examples
    report = (out / "class_report.md").read_text(encoding="utf-8")
    assert (out / "scores.png").stat().st_size > 10_000
    for lab in all_labs().values():
        assert lab.title in report
    assert "Most common failure messages" in report


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_no_tick_before_a_lost_part(case, graded_examples):
    """Never a ✅ followed by a 0 (issue 32): every part a case loses points
    on printed ❌ in the student's own check, as the real grader ran it in
    the student's kernel (the check cell before its hidden tests)."""
    _, results = graded_examples
    result = results[case["id"]]
    lab = get_lab(case["lab"])
    for part in lab.parts:
        if case["expected"][part.part_id] < part.points:
            shown = result.parts[part.part_id].visible_check
            assert "❌" in shown and "✅" not in shown, (
                f"{part.part_id} lost points after its check printed: {shown!r}"
            )

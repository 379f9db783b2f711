"""Grading a notebook runs each part's hidden tests once: a second run would double the grading
time without changing a score (issue 14)."""
import collections

from bpe_labs import ROOT as REPO_ROOT
from autograder.grading import grade


def test_each_part_s_hidden_tests_run_once(monkeypatch):
    graded = collections.Counter()
    run_part = grade.run_part

    def counting(session, part, *args, **kwargs):
        graded[part.part_id] += 1
        return run_part(session, part, *args, **kwargs)

    monkeypatch.setattr(grade, "run_part", counting)
    result = grade.grade_file(REPO_ROOT / "examples" / "submissions" / "toy-correct.ipynb", "once")
    assert result.status == "graded" and result.score == result.max_score
    assert graded == {part_id: 1 for part_id in result.parts}

"""One kernel per notebook, and a second kernel only when a part's hidden tests must run at
their place: a later cell changed what they reach (grade.py, codec.snapshot).

Each case grades one toy notebook twice: the default (visible run, then the hidden tests at the
end when nothing moved) and ``--one-kernel`` (hidden tests at each test cell's place, the old
route). The part scores must be the same; the number of kernels says which route was taken.
"""
from __future__ import annotations

import nbformat
import pytest

from bpe_labs.examples import make_submission
from autograder.grading.grade import Settings, grade_file
from autograder.labs import nbgrader_meta
from autograder.grading.result import GradeResult

BROKEN_MERGE = """
def merge_pair_in_word(word, pair):  # a later "experiment" that breaks the graded function
    return word
"""

# learn_bpe picks the best pair with a helper of the notebook, which reads a global setting
PICK = {"learn_solution": [{"old": "best = max(pair_counts, key=pair_counts.get)",
                            "new": "best = pick(pair_counts)"}]}
PICK_HELPER = """
RULE = {"order": "first"}

def pick(counts):
    return max(counts, \
key=counts.get) if RULE["order"] == "first" else max(reversed(list(counts)), key=counts.get)
"""

CASES = {
    # nothing after any test cell changes what a part reaches: one kernel
    "untouched": ({"tokenize": "print('a student cell at the end')"}, None, 1),
    # a new global nobody reads, a demonstration call: still one kernel
    "harmless": (
        {"merge": "demo = merge_pair_in_word(['a', 'b', '</w>'], ('a', 'b'))\nprint(demo)"}, None,
        1,
    ),
    # a later global named like an attribute the graded code uses (text.split() and a global split):
    # an attribute is no global, so still one kernel
    "attribute name": (
        {"initialize": "split = 'a global named like the method text.split'"}, None, 1,
    ),
    # the graded function redefined after its test cell: merge keeps its points (graded at its
    # place), learn and tokenize, after the change, are graded with the broken one
    "redefined": ({"merge": BROKEN_MERGE}, None, 2),
    # learn_bpe's helper and the global it reads, untouched: one kernel
    "helper kept": ({"pair_frequencies": PICK_HELPER}, PICK, 1),
    # learn_bpe's helper redefined after learn's test cell (learn keeps its points)
    "helper rebound": (
        {
            "pair_frequencies": PICK_HELPER,
            "learn": "def pick(counts):\n    return min(counts, key=counts.get)",
        }, PICK, 2,
    ),
    # a global the helper reads, changed in place after learn's test cell (learn keeps its points)
    "global mutated": (
        {"pair_frequencies": PICK_HELPER, "learn": "RULE['order'] = 'last'"}, PICK, 2,
    ),
}


def _toy(tmp_path, name: str, after: dict[str, str], replace: dict | None) -> str:
    """The correct toy notebook with a code cell added after each test cell named in ``after``."""
    nb = make_submission({"lab": "toy_bpe", "id": name, "fill": "solution",
                          "replace": replace or {}})
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        grade_id = nbgrader_meta(cell).get("grade_id")
        if grade_id in after:
            cells.append(nbformat.v4.new_code_cell(after[grade_id]))
    nb.cells = cells
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def _scores(result: GradeResult) -> dict[str, float]:
    assert result.status == "graded", result
    return {part_id: part.score for part_id, part in result.parts.items()}


@pytest.mark.parametrize("name", CASES)
def test_route_and_scores(tmp_path, name):
    after, replace, kernels = CASES[name]
    path = _toy(tmp_path, name.replace(" ", "-"), after, replace)
    default = grade_file(path, "s1", Settings())
    at_place = grade_file(path, "s1", Settings(feedback_kernel=False))
    assert default.kernels == kernels
    assert _scores(default) == _scores(at_place)
    if name == "redefined":
        assert _scores(default)["merge"] == 2
    if replace:
        assert _scores(default)["learn"] == 3
    # every visible check was shown
    assert all(part.visible_check for part in default.parts.values())

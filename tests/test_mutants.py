"""Every lab's visible checks are as strong as its
grade, mutant by mutant (mutation/, `make mutants`).

Each lab's stored analysis (docs/labs/mutants/<lab>.json) is used while the files it was computed
from are unchanged (its hash); otherwise the lab is analysed again here (a minute or two for a lab).
A mutant that only the hidden tests catch (the check prints ✅, the grade is 0) fails the test
unless docs/labs/mutants/<lab>.yaml lists it as hidden by design with its reason; so does one that
neither catches, unless listed as equivalent. The contract page gives the counts as computed.
"""
from __future__ import annotations

import nbformat
import pytest

from autograder.labs import all_labs, nbgrader_meta, read_lab
from mutation import analysis
from mutation.analysis import allow_list, contract_section, page_section, problems, results

LABS = list(all_labs())


@pytest.fixture(scope="module")
def found():
    return {}


def _results(lab_id: str, found: dict) -> dict:
    if lab_id not in found:
        found[lab_id] = results(all_labs()[lab_id], store=False, progress=lambda line: None)
    return found[lab_id]


@pytest.mark.parametrize("lab_id", LABS)
def test_no_mutant_is_caught_by_the_hidden_tests_alone_unless_listed(lab_id, found):
    assert problems(_results(lab_id, found), allow_list(lab_id)) == []


@pytest.mark.parametrize("lab_id", LABS)
def test_the_contract_page_gives_the_mutant_counts(lab_id, found):
    assert page_section(lab_id) == contract_section(_results(lab_id, found), allow_list(lab_id)), \
        f"docs/labs/{lab_id}.md: its mutants section is not the analysis's: run make mutants"


# Lab 1's learn check calls learn_bpe(["ab"], 5), the one public case where no pair is left before
# the last merge. The weaker check below is handed a made-up right answer instead of calling it.
SMALL_CASE = '_run(learn_bpe, ["ab"], 5)'
MADE_UP = '(True, ([("a", "b"), ("ab", "</w>")], ["a", "b", "</w>", "ab", "ab</w>"], [["ab</w>"]]))'


def test_a_weaker_check_brings_a_hidden_only_mutant_the_test_names(tmp_path):
    """Without its small case, lab 1's learn check prints ✅ for a learn_bpe that never
    stops early (it is graded 0), and the test says so; with it, nothing is unexplained."""
    lab = all_labs()["toy_bpe"]
    notebook = nbformat.read(lab.solution_path, as_version=4)
    helpers = next(
        cell for cell in notebook.cells if nbgrader_meta(cell).get("grade_id") == "feedback_helpers"
    )
    assert SMALL_CASE in helpers.source
    helpers.source = helpers.source.replace(SMALL_CASE, MADE_UP)
    nbformat.write(notebook, tmp_path / "toy_bpe.ipynb")
    weaker = read_lab(tmp_path / "toy_bpe.ipynb")
    # the stored analysis is of the real notebook: computed again
    assert analysis.cached(weaker) is None

    found = analysis.run_lab(weaker, cells=("learn_solution",), progress=lambda line: None)
    wrong = problems(found, allow_list("toy_bpe"))
    dropped_stop = [
        line for line in wrong if "hidden-only" in line and "if not pair_counts:" in line
    ]
    assert dropped_stop, wrong
    assert (
        problems(
            _only_cell(results(lab, store=False, progress=lambda line: None), "learn_solution"),
            allow_list("toy_bpe"),
        )
        == []
    )


def _only_cell(found: dict, cell: str) -> dict:
    return {**found, "mutants": [record for record in found["mutants"] if record["cell"] == cell]}

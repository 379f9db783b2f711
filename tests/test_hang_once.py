"""A hang costs its notebook one time limit, not the class (issue 33, 6): once a student's
function ran out of time, the cells and hidden tests that call it again fail at once with the
same verdict, instead of waiting out the cell limit (60 s by default) in every cell that calls
it. A real batch, real kernels."""
from __future__ import annotations

from adversarial import cell_of, correct_notebook, dump
from autograder.batch.run import grade_folder
from autograder.grading.grade import Settings
from autograder.kernel.session import Limits
from autograder.grading.result import Verdict

CELL_SECONDS = 4.0
SETTINGS = Settings(limits=Limits(cell_seconds=CELL_SECONDS, call_seconds=3, notebook_seconds=150,
                                  memory_bytes=int(1.5 * 1024**3)), part_seconds=30)
LEARN_NEVER_ENDS = '''\
def learn_bpe(dataset, num_merges):
    while True:  # the stopping test was forgotten
        pass
'''


def test_a_function_that_hung_once_fails_at_once_in_every_later_cell_and_part(tmp_path):
    """Was: learn_bpe looping cost the cell limit in its demo cell, again in its check cell, and
    the call limit again in its hidden tests (about 5 minutes with the default limits)."""
    nb = correct_notebook("toy_bpe")
    cell_of(nb, "learn_solution").source = LEARN_NEVER_ENDS
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ann_toy_bpe.ipynb").write_bytes(dump(nb))
    (result,) = grade_folder(tmp_path / "sub", tmp_path / "out", SETTINGS, workers=0,
                             progress=False)
    assert result.status == "graded", result.message
    stopped = [cell for cell in result.cells if cell.error.startswith("stopped after")]
    # the one time limit it costs
    assert [cell.cell for cell in stopped] == ["learn_demo"], result.cells
    learn = result.parts["learn"]
    # its check cell was not run again: it calls learn_bpe, which already ran out of time
    assert learn.visible_check.startswith("not run: it uses learn_bpe"), learn.visible_check
    # and its hidden tests failed at once, with the same verdict (the cell's limit, not the call's)
    assert learn.verdict == Verdict.DID_NOT_FINISH and f"{CELL_SECONDS:g} s" in learn.message, learn
    assert {
        part_id: part.score for part_id, part in result.parts.items() if part_id != "learn"
    } == {"initialize": 2, "pair_frequencies": 2, "merge": 2, "tokenize": 2}


def test_the_same_definition_again_keeps_a_function_hung_and_another_lifts_it():
    """The file's second kernel (parts graded at their places) runs the defining cell again: the
    same definition must not wait out the limit again; a different one (a fix in a later cell) is
    run as it is."""
    from autograder.kernel.calls import NotebookCalls

    calls = NotebookCalls(None, Limits(), None)  # no kernel needed: the bookkeeping only
    calls.ran(LEARN_NEVER_ENDS)
    calls._hang("learn_bpe", "did not finish within 4 s")
    assert calls.hung_in("check_learn(learn_bpe)").startswith("not run: it uses learn_bpe")
    assert calls.hung_in(LEARN_NEVER_ENDS) == ""  # run: it defines other things too, maybe
    assert calls.hung_in("merges, _, _ = learn_bpe(betty, 5)") != ""  # still hung
    assert calls.hung_in("def learn_bpe(dataset, num_merges):\n    return [], [], []\n") == ""
    assert calls.hung_in("learn_bpe(betty, 5)") == ""  # defined anew: called as it now is

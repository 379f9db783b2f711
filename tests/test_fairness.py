"""One bug costs one part: a notebook right everywhere except one answer, left as the release's
stub, loses exactly the points of the parts that test that answer, in every lab.

Reference: the points of each part in the solution notebook. Every answer (the functions one part
tests) of every lab is blanked in turn; all the notebooks are graded in one batch.
"""
import copy

import nbformat
import pytest

from autograder.batch.run import grade_folder
from bpe_labs.examples import make_submission
from autograder.labs import all_labs, answer_functions, nbgrader_meta


def answers(lab):
    """Each answer once: the tuple of functions a part tests, in part order."""
    return list(dict.fromkeys(part.functions for part in lab.parts if part.functions))


def blanked(lab, functions) -> nbformat.NotebookNode:
    """The correct notebook with the cells that define ``functions`` as the release has them."""
    nb = make_submission({"lab": lab.lab_id, "fill": "solution", "id": "fair", "spec": "-"})
    release = {nbgrader_meta(cell).get("grade_id"): cell.source
               for cell in lab.release_notebook().cells}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("solution") and set(answer_functions([cell])) & set(functions):
            cell.source = copy.copy(release[meta["grade_id"]])
    return nb


CASES = [(lab, functions) for lab in all_labs().values() for functions in answers(lab)]


def case_name(lab, functions):
    return f"{lab.lab_id}-{'-'.join(functions)}"


def selected_cases(session) -> list:
    """The cases this run tests (all of them, or those ``-k``
    keeps): a run of one lab grades that lab's only."""
    names = {case_name(item.callspec.params["lab"], item.callspec.params["functions"])
             for item in session.items
             if "functions" in getattr(getattr(item, "callspec", None), "params", {})}
    return [case for case in CASES if case_name(*case) in names]


@pytest.fixture(scope="module")
def graded_blanks(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("blanks")
    cases = selected_cases(request.session)
    for lab, functions in cases:
        nbformat.write(blanked(lab, functions),
                       folder / f"{case_name(lab, functions).replace('_', '')}.ipynb")
    results = grade_folder(folder, tmp_path_factory.mktemp("blanks-out"), workers=2, progress=False)
    by_id = {result.student_id: result for result in results}
    # shown with pytest -s
    print("\n| lab | answer blanked | score | fair score |\n|---|---|---|---|")
    for lab, functions in cases:
        result = by_id[case_name(lab, functions).replace("_", "")]
        fair = lab.max_score - sum(part.points for part in lab.parts
                                   if set(part.functions) & set(functions))
        print(f"| {lab.lab_id} | {', '.join(functions)} | {result.score:g}/{lab.max_score:g} | "
              f"{fair:g}/{lab.max_score:g} |")
    return by_id


def test_there_is_one_case_per_answer_of_every_lab():
    assert len(CASES) == 38
    for lab, functions in CASES:
        assert "NotImplementedError" in "\n".join(c.source for c in blanked(lab, functions).cells)


@pytest.mark.parametrize("lab, functions", CASES, ids=[case_name(*case) for case in CASES])
def test_one_blank_answer_costs_only_its_parts(lab, functions, graded_blanks):
    result = graded_blanks[case_name(lab, functions).replace("_", "")]
    assert result.status == "graded", result.message
    lost = {part.part_id for part in lab.parts if set(part.functions) & set(functions)}
    fair = lab.max_score - sum(part.points for part in lab.parts if part.part_id in lost)
    scores = {part_id: part.score for part_id, part in result.parts.items()}
    assert scores == {
        part.part_id: (0 if part.part_id in lost else part.points) for part in lab.parts
    }, {part_id: part.message for part_id, part in result.parts.items() if not part.passed}
    assert result.score == fair
    for part in lab.parts:
        message = result.parts[part.part_id].message
        used = [name for name in functions if f"a reference {name}" in message]
        if part.part_id not in lost and used:
            assert "because yours fails" in message

"""Each matching pass of repair.py alone, on synthetic cells (as nbgrader tests OverwriteCells)."""
from __future__ import annotations

from nbformat.v4 import new_code_cell, new_markdown_cell

from autograder.grading.repair import (
    Matching,
    match_answers_by_place,
    match_by_ids,
    match_by_text,
    match_cells,
    match_edited_given_cells,
)


def given(source, cell_id=None):
    cell = new_code_cell(source)
    if cell_id:
        cell["id"] = cell_id
    return cell


def answer(source, grade_id, cell_id=None):
    cell = new_code_cell(source,
                         metadata={"nbgrader": {"solution": True, "grade": False,
                                                "grade_id": grade_id}})
    if cell_id:
        cell["id"] = cell_id
    return cell


def check_cell(source, grade_id):
    return new_code_cell(source,
                         metadata={"nbgrader": {"grade": True, "grade_id": grade_id, "points": 1}})


def bare(cell):
    """The cell as an editor that drops metadata and ids saves it."""
    copy = (
        new_code_cell(cell.source) if cell.cell_type == "code" else new_markdown_cell(cell.source)
    )
    copy["id"] = "fresh-" + str(abs(hash(cell.source)) % 10**6)
    return copy


RELEASE = (
    new_markdown_cell("# Lab"),
    given("import collections", "setup"),
    answer("def merge(pair, words):\n    raise NotImplementedError()", "merge", "merge-cell"),
    check_cell("assert merge(('a', 'b'), []) == []", "merge_test"),
    given("print('done')", "bye"),
)


def run(passes, cells):
    matching = Matching(RELEASE, cells)
    for match_pass in passes:
        match_pass(matching)
    return matching.matched


def test_ids_match_grade_ids_and_unchanged_cells_but_not_an_edited_given_cell_by_id():
    cells = [RELEASE[0], given("import collections  # mine", "setup"),
             answer("def merge(pair, words):\n    return []", "merge"), RELEASE[3], RELEASE[4]]
    matched = run([match_by_ids], cells)
    assert matched[2] == 2 and matched[3] == 3  # by grade_id
    assert matched[4] == 4  # by id, text unchanged
    assert 1 not in matched  # same id, other text: left to the later passes


def test_text_matches_cells_that_lost_their_metadata():
    cells = [bare(cell) for cell in RELEASE]
    assert run([match_by_ids], cells) == {}
    matched = run([match_by_text], cells)
    # every cell but the answer, whose text the student changed
    assert matched == {0: 0, 1: 1, 3: 3, 4: 4}


def test_an_answer_is_found_between_its_neighbours_by_the_function_it_defines():
    cells = [bare(RELEASE[0]), bare(RELEASE[1]), given("x = 1"),
             given("def merge(p, w):\n    return [w]"), bare(RELEASE[3]), bare(RELEASE[4])]
    matched = run([match_by_text, match_answers_by_place], cells)
    assert matched[2] == 3  # not the unrelated "x = 1"


def test_an_answer_is_not_taken_from_outside_its_neighbours():
    cells = [bare(RELEASE[0]), given("def merge(p, w):\n    return [w]"), bare(RELEASE[1]),
             bare(RELEASE[3]), bare(RELEASE[4])]
    matched = run([match_by_text, match_answers_by_place], cells)
    assert 2 not in matched  # it stands before the setup cell: the answer's own place is empty


def test_an_edited_given_cell_without_metadata_is_recognised_when_clearly_the_same():
    edited = given("print('done!')")
    unrelated = given("import numpy as np")
    cells = [bare(RELEASE[0]), bare(RELEASE[1]), bare(RELEASE[2]), bare(RELEASE[3]), unrelated,
             edited]
    matched = run([match_by_text, match_answers_by_place, match_edited_given_cells], cells)
    assert matched[4] == 5
    assert 4 not in matched.values()  # the unrelated cell stays the student's own


def test_match_cells_runs_every_pass():
    cells = [bare(RELEASE[0]), given("import collections  # mine", "setup"),
             given("def merge(p, w):\n    return [w]"), bare(RELEASE[3]), bare(RELEASE[4])]
    assert match_cells(RELEASE, cells) == {0: 0, 1: 1, 2: 2, 3: 3, 4: 4}

"""The Submit cell and its helper, added to every student notebook when it is released.

The helper (``submit_helper.py``, standard library only) goes right after the notebook's setup cells
(its first run of code cells); a short text and the Submit cell end the notebook. The course's
server URL is built in from one setting (``Course.server_variable``, an environment variable read at
build time, like the course's home); with none, the cell says how to hand the file in instead.

Both cells are given cells tagged ``grading-skip`` and ``autograder-submit``: the grader never runs
them (so grading never touches the network through them), and a student who ran, edited, moved or
deleted them loses nothing and gets no integrity note (``grading/repair.py``). Adding them is
idempotent: cells with these ids are replaced, never doubled.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat

from autograder.course import Course
from autograder.grading.repair import GRADING_SKIP, SUBMIT_TAG

HELPER_ID, INTRO_ID, SUBMIT_ID = (
    "autograder_submit_helper",
    "autograder_submit_intro",
    "autograder_submit",
)
# the helper is the service's client, kept beside the service (read as text, never imported)
HELPER_SOURCE = Path(__file__).with_name("submit_helper.py")

INTRO = """## Submit

Run the cell below to hand in this notebook. It sends the notebook to your course's grading \
service, waits
for the autograder, and shows your score for each part with what the autograder found, usually \
within a
minute. The first time, it asks for your personal token (it is in your instructor's message). \
In Colab it
sends the notebook as it is now; in Jupyter or VS Code it sends the **saved** file, so save first
(Ctrl+S / ⌘+S). You may submit again after fixing something. Running, changing or deleting this \
cell or the
Submit helper costs you nothing: the autograder never runs them."""

HAND_IN_INTRO = """## Submit

Your course collects the notebook file itself: run the cell below to see how to hand it in."""

SUBMIT = """# Submit this notebook for grading: your score and feedback appear below.
try:
    submit
except NameError:
    print("First run the 'Submit helper' cell near the top (right after the setup cells), \
then this cell again.")
else:
    submit()"""


def server_url(course: Course) -> str:
    """The grading service's URL for the notebooks being built ('' if the course has none)."""
    variable = getattr(course, "server_variable", None)
    return os.environ.get(variable, "").strip().rstrip("/") if variable else ""


def helper_source(server: str, lab_id: str, token_variable: str) -> str:
    """The helper cell's code with the course's settings built in."""
    source = HELPER_SOURCE.read_text(encoding="utf-8").rstrip() + "\n"
    for name, value in (("server", server), ("lab", lab_id), ("token_variable", token_variable)):
        # a JSON string is a Python string literal too (the lambda runs in this iteration only)
        source, count = re.subn(
            rf'^    {name} = "[^"\n]*"',
            lambda _: f"    {name} = {json.dumps(value, ensure_ascii=False)}",  # noqa: B023
            source,
            count=1,
            flags=re.M,
        )
        assert count == 1, f"submit_helper.py has no {name} = ... line"
    return source


def _tagged(cell, cell_id: str, hidden: bool = False):
    cell["id"] = cell_id
    cell.metadata["tags"] = [GRADING_SKIP, SUBMIT_TAG]
    if cell.cell_type == "code":
        cell.metadata["nbgrader"] = {
            "grade": False,
            "solution": False,
            "locked": True,
            "task": False,
            "grade_id": cell_id,
            "schema_version": 3,
        }
    if hidden:
        cell.metadata["jupyter"] = {"source_hidden": True}
        cell.metadata["cellView"] = "form"  # Colab shows the title line only
    return cell


def with_submit_cells(
    nb: nbformat.NotebookNode, lab_id: str, course: Course
) -> nbformat.NotebookNode:
    """``nb`` with the helper after its setup cells and the Submit cell at its end (in place;
    returned)."""
    ours = {HELPER_ID, INTRO_ID, SUBMIT_ID}
    nb.cells = [cell for cell in nb.cells if cell.get("id") not in ours]
    token_variable = getattr(course, "token_variable", None) or "AUTOGRADER_TOKEN"
    server = server_url(course)
    helper = _tagged(
        nbformat.v4.new_code_cell(helper_source(server, lab_id, token_variable)),
        HELPER_ID,
        hidden=True,
    )
    first_code = next(
        (index for index, cell in enumerate(nb.cells) if cell.cell_type == "code"), len(nb.cells)
    )
    after_setup = next(
        (
            index
            for index in range(first_code, len(nb.cells))
            if nb.cells[index].cell_type != "code"
        ),
        len(nb.cells),
    )
    nb.cells.insert(after_setup, helper)
    nb.cells.append(
        _tagged(nbformat.v4.new_markdown_cell(INTRO if server else HAND_IN_INTRO), INTRO_ID)
    )
    nb.cells.append(_tagged(nbformat.v4.new_code_cell(SUBMIT), SUBMIT_ID))
    return nb


def is_submit_cell(cell) -> bool:
    return SUBMIT_TAG in (cell.get("metadata", {}).get("tags") or [])

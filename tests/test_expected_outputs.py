"""What a task box promises is what the solution prints: every "Expected output" block of a lab
equals the stored output of the first given code cell after the student's answer.

Reference: the solution notebooks as executed by ``python -m autograder execute-solutions`` (and
re-checked by nbval). Cells whose output depends on the corpus (``nbval-ignore-output``) are
skipped.
"""
import re

import pytest

from autograder.labs import all_labs, nbgrader_meta

BLOCK = re.compile(r"[Ee]xpected output[^\n]*\n+```[^\n]*\n(.*?)```", re.S)


def promised_outputs():
    for lab in all_labs().values():
        cells = lab.solution_notebook().cells
        for index, cell in enumerate(cells):
            found = BLOCK.search(cell.source) if cell.cell_type == "markdown" else None
            if not found:
                continue
            after_answer = False
            for later in cells[index + 1:]:
                meta = nbgrader_meta(later)
                if meta.get("solution"):
                    after_answer = True
                elif later.cell_type == "code" and not meta.get("grade") and after_answer:
                    yield pytest.param(found.group(1), later, id=f"{lab.lab_id}:{later.get('id')}")
                    break


def printed(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def normalized(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip().splitlines()]


@pytest.mark.parametrize("promised, cell", list(promised_outputs()))
def test_expected_output_block_is_what_the_solution_prints(promised, cell):
    if "nbval-ignore-output" in cell.metadata.get("tags", []):
        pytest.skip("the output depends on the corpus")
    assert normalized(printed(cell)) == normalized(promised)

"""The contract of each lab's functions (``docs/labs/<lab_id>.md``), read and tried.

A lab's contract page has one table: every rule its task text states, for each the function it
binds, the public example that the function's visible check runs to show it, the hidden test that
grades it, and a realistic mistake that breaks it. The mistakes are written in the page's YAML
block, as exact replacements in the solution code (like ``examples/<lab_id>.yaml``), or name an
example case of ``examples/<lab_id>.yaml`` (graded through the real autograder by test_examples).

:func:`try_mistake` runs a lab's notebook in this process with one mistake planted, up to the
check cell of the part it is about: what that part's visible check printed, and whether its hidden
tests failed. Every rule must do both: ❌ in the student's own check, and the points lost.
"""
from __future__ import annotations

import contextlib
import functools
import io
import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from IPython.core.inputtransformer2 import TransformerManager

from autograder.labs import HIDDEN_TESTS, Lab, answer_functions, nbgrader_meta
from bpe_labs import ROOT
from bpe_labs.examples import answer_code

CONTRACTS = ROOT / "docs" / "labs"
# corpus-sized runs and timings: no check needs them
SKIPPED_TAGS = {"nbval-ignore-output", "grading-skip"}
_CODE = re.compile(r"`([^`]+)`")
_YAML = re.compile(r"```yaml\n(.*?)```", re.S)


def _first_code(cell: str) -> str:
    """The first `code` span of a table cell, or "" when it has none."""
    return (_CODE.findall(cell) or [""])[0]


@dataclass(frozen=True)
class Rule:
    number: str
    function: str
    text: str
    example: str  # code of the function's visible check that shows the rule
    hidden: str  # code (or message text) of the hidden test that grades it
    mistake: str  # a mistake id of the page's YAML block, or "example:<case id>"
    # the part that grades the rule, when several parts test the function (a second code span)
    part: str = ""


def contract_path(lab_id: str) -> Path:
    return CONTRACTS / f"{lab_id}.md"


def read_contract(lab_id: str) -> tuple[list[Rule], dict]:
    """The rules of the lab's contract table, and its
    mistakes (id -> {solution cell: replacements})."""
    text = contract_path(lab_id).read_text(encoding="utf-8")
    rules = []
    for line in text.splitlines():
        cells = [cell.strip().replace("\\|", "|")
                 for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) != 6 or not cells[0].isdigit():
            continue
        number, function, rule, example, hidden, mistake = cells
        spans = _CODE.findall(function)
        rules.append(Rule(number, _first_code(function), rule, _first_code(example),
                          _first_code(hidden), _first_code(mistake),
                          spans[1] if len(spans) > 1 else ""))
    blocks = _YAML.findall(text)
    mistakes = (yaml.safe_load(blocks[0]) or {}).get("mistakes", {}) if blocks else {}
    return rules, mistakes


def part_of(lab: Lab, function: str, part_id: str = ""):
    """The part whose hidden tests test ``function`` (the first one, or the one named)."""
    return next(part for part in lab.parts if function in part.functions
                and part_id in ("", part.part_id))


def check_source(lab: Lab) -> str:
    """The visible checks: the feedback helpers cell of the lab."""
    return next(cell.source for cell in lab.solution_notebook().cells
                if nbgrader_meta(cell).get("grade_id") == "feedback_helpers")


@dataclass
class Tried:
    printed: str  # what the part's visible check printed
    # "" when the part's hidden tests passed, else the exception's class and text
    hidden_failed: str


@functools.lru_cache(maxsize=None)
def _compiled(source: str, name: str):
    """A cell's source as compiled plain Python (``%pip`` lines and other magics made calls)."""
    return compile(TransformerManager().transform_cell(source), f"<cell {name}>", "exec")


def try_mistake(
    lab: Lab, function: str, replacements: dict | None, part_id: str = "", hidden: bool = True
) -> Tried:
    """Run the lab's solution notebook in this process with ``replacements`` (solution cell
    grade_id -> [{old, new}]) in its answer code, up to the check cell of ``function``'s part:
    its visible check's output, and whether that part's hidden tests fail (not run without
    ``hidden``)."""
    part = part_of(lab, function, part_id)
    namespace: dict = {"__name__": "__main__"}
    replacements = replacements or {}
    seen = set()
    for cell in lab.solution_notebook().cells:
        if cell.cell_type != "code" or SKIPPED_TAGS & set(cell.metadata.get("tags", [])):
            continue
        meta = nbgrader_meta(cell)
        grade_id = meta.get("grade_id")
        source = cell.source
        if meta.get("solution"):
            source = answer_code(source)
            for change in replacements.get(grade_id, []):
                assert change["old"] in source, (
                    f"{lab.lab_id}: {change['old']!r} is not in {grade_id}"
                )
                source = source.replace(change["old"], change["new"])
                seen.add(grade_id)
        if meta.get("grade"):
            if grade_id != part.part_id:  # another part's check: it only prints
                continue
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                _exec(HIDDEN_TESTS.sub("", source), namespace, cell.id)
            try:
                if hidden:
                    with contextlib.redirect_stdout(io.StringIO()):
                        exec(compile(part.hidden_tests, f"<hidden tests: {part.part_id}>", "exec"),
                             namespace)
                failed = ""
            except Exception as error:  # noqa: BLE001 - any failure of the hidden tests costs the part
                failed = f"{type(error).__name__}: {error}"
            assert seen == set(replacements), (
                f"{lab.lab_id}: replacements in cells after the part: {set(replacements) - seen}"
            )
            return Tried(printed.getvalue(), failed)
        with contextlib.redirect_stdout(io.StringIO()):
            _exec(source, namespace, cell.id, quiet=not meta.get("solution"))
    raise AssertionError(f"{lab.lab_id}: no check cell for {function}")


def _exec(source: str, namespace: dict, name: str, quiet: bool = True) -> None:
    """Run a cell; a given cell that fails because of the planted mistake is no matter."""
    try:
        exec(_compiled(source, name), namespace)
    except Exception:  # noqa: BLE001
        if not quiet:
            raise


def answer_function_names(lab: Lab) -> list[str]:
    return answer_functions(lab.solution_notebook().cells)

"""Lab 7's speed rule for ``train_bpe`` (``bpe_labs/speed.py``) is one rule: the visible check in
the students' notebook holds copies of the module's functions and numbers (a notebook has no
``bpe_labs``), and the hidden tests use the module itself. Here: each copy is the same code with the
same numbers, and each hidden test judges by the module's rule and nothing else. (That check and
grade give the same verdict on real submissions, under load too, is
``test_a_speed_verdict_is_the_one_the_check_showed`` in tests/test_examples.py.)
"""
import ast
import inspect

import pytest

from autograder.labs import HIDDEN_TESTS, get_lab, nbgrader_meta
from bpe_labs import speed

# lab -> the check's copies (its name -> the module's function), its numbers (its name -> the
# module's name)
COPIES = {
    "bpe_tokenizer": ({"_speed_text": speed.speed_text, "_one_pass": speed.one_pass,
                       "_times_the_unit": speed.times_the_unit},
                      {"_SPEED_PRETOKENS": "PRETOKENS", "_SPEED_WORDS": "WORDS",
                       "_SPEED_MERGES": "MERGES",
                       "_TRAIN_MULTIPLE": "TRAIN_MULTIPLE", "_SPEED_ROUNDS": "ROUNDS",
                       "_SPEED_CLEAR": "CLEAR", "_SPEED_LETTERS": "LETTERS"}),
}
# part -> what its hidden test must use of the module
HIDDEN = {
    ("bpe_tokenizer", "train_bpe"): ("hidden_speed.times_the_unit(", "hidden_speed.one_pass(",
                                     "hidden_speed.speed_text(", "hidden_speed.TRAIN_MULTIPLE",
                                     "256 + 1 + hidden_speed.MERGES"),
}


def cell(lab: str, grade_id: str) -> str:
    return next(c.source for c in get_lab(lab).solution_notebook().cells
                if nbgrader_meta(c).get("grade_id") == grade_id)


def body(function: ast.FunctionDef, renames: dict[str, str]) -> str:
    """A function's arguments and statements (docstring left out), module-level names renamed."""
    statements = function.body[1:] if ast.get_docstring(function) else function.body
    tree = ast.Module(body=[function.args, *statements], type_ignores=[])  # type: ignore[list-item]
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in renames:
            node.id = renames[node.id]
    return ast.dump(tree)


@pytest.mark.parametrize("lab", sorted(COPIES))
def test_the_check_holds_the_rule_of_bpe_labs_speed_word_for_word(lab):
    copies, numbers = COPIES[lab]
    check = {node.name: node for node in ast.parse(cell(lab, "feedback_helpers")).body
             if isinstance(node, ast.FunctionDef)}
    for copy, original in copies.items():
        module_function = ast.parse(inspect.getsource(original)).body[0]
        assert body(check[copy], numbers) == body(module_function, {}), (
            f"{lab}: {copy} is not bpe_labs.speed.{original.__name__}"
        )


@pytest.mark.parametrize("lab", sorted(COPIES))
def test_the_check_uses_the_same_numbers(lab):
    _, numbers = COPIES[lab]
    namespace: dict = {}
    for node in ast.parse(cell(lab, "feedback_helpers")).body:
        if isinstance(node, ast.Assign):
            names = {n.id for target in node.targets for n in ast.walk(target)
                     if isinstance(n, ast.Name)}
            if names & set(numbers):
                exec(compile(ast.Module(body=[node], type_ignores=[]), "<check>", "exec"),
                     namespace)
    assert {name: namespace.get(name) for name in numbers} == {name: getattr(speed, value)
                                                               for name, value in numbers.items()}


@pytest.mark.parametrize("lab, part", sorted(HIDDEN))
def test_the_hidden_test_judges_by_the_module_alone(lab, part):
    hidden = HIDDEN_TESTS.search(cell(lab, part)).group(0)
    for used in HIDDEN[(lab, part)]:
        assert used in hidden, used
    assert (
        "assert_fast_enough" not in hidden
        and "perf_counter" not in hidden
        and "reference_seconds" not in hidden
    ), "a second speed rule in the hidden test"

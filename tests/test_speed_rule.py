"""The course's speed rules (``bpe_labs/speed.py`` measures; ``bpe_labs/speed_bpe_tokenizer.py``
and ``bpe_labs/speed_fast_bpe.py`` give each timed part its case, unit and limit) are one rule per
part: the visible check in the students' notebook holds copies of the modules' functions and
numbers (a notebook has no ``bpe_labs``), and the hidden tests use the modules themselves. Here:
each copy is the same code with the same numbers, and each hidden test judges by the module's rule
and nothing else. (That check and grade give the same verdict on real submissions, under load too,
is ``test_a_speed_verdict_is_the_one_the_check_showed`` in tests/test_examples.py.)
"""
import ast
import inspect

import pytest

from autograder.labs import HIDDEN_TESTS, get_lab, nbgrader_meta
from bpe_labs import speed, speed_africa_galore, speed_bpe_tokenizer, speed_fast_bpe

MEASURE = {"_times_the_unit": speed.times_the_unit}
MEASURE_NUMBERS = {"_SPEED_ROUNDS": (speed, "ROUNDS"), "_SPEED_CLEAR": (speed, "CLEAR"),
                   "_SPEED_CUT_ROOM": (speed, "CUT_ROOM")}

# lab -> the check's copies (its name -> the module's function), its numbers (its name -> the
# module and the name there)
COPIES = {
    "africa_galore": (
        {**MEASURE, "_speed_corpus": speed_africa_galore.speed_corpus,
         "_count_words": speed_africa_galore.count_words},
        {**MEASURE_NUMBERS,
         **{copy: (speed_africa_galore, name) for copy, name in [
             ("_AFRICA_WORDS", "WORDS"), ("_AFRICA_DISTINCT", "DISTINCT"),
             ("_AFRICA_MERGES", "MERGES"), ("_AFRICA_MULTIPLE", "MULTIPLE"),
             ("_AFRICA_LETTERS", "LETTERS")]}},
    ),
    "bpe_tokenizer": (
        {**MEASURE, "_speed_text": speed_bpe_tokenizer.speed_text,
         "_one_pass": speed_bpe_tokenizer.one_pass,
         "_encode_case": speed_bpe_tokenizer.encode_case,
         "_passes_over": speed_bpe_tokenizer.passes_over},
        {**MEASURE_NUMBERS,
         **{copy: (speed_bpe_tokenizer, name) for copy, name in [
             ("_SPEED_PRETOKENS", "PRETOKENS"), ("_SPEED_WORDS", "WORDS"),
             ("_SPEED_MERGES", "MERGES"),
             ("_TRAIN_MULTIPLE", "TRAIN_MULTIPLE"), ("_SPEED_LETTERS", "LETTERS"),
             ("_ENCODE_MERGES", "ENCODE_MERGES"), ("_ENCODE_WORDS", "ENCODE_WORDS"),
             ("_ENCODE_PASSES", "ENCODE_PASSES"), ("_ENCODE_MULTIPLE", "ENCODE_MULTIPLE")]}},
    ),
    "fast_bpe": (
        {**MEASURE, "_speed_words": speed_fast_bpe.speed_words,
         "_recounts": speed_fast_bpe.recounts},
        {**MEASURE_NUMBERS,
         **{copy: (speed_fast_bpe, name) for copy, name in [
             ("_FAST_WORDS", "WORDS"), ("_FAST_MERGES", "MERGES"), ("_FAST_RECOUNTS", "RECOUNTS"),
             ("_FAST_MULTIPLE", "MULTIPLE"), ("_FAST_LETTERS", "LETTERS")]}},
    ),
}
# part -> what its hidden test must use of the modules
LAB7_IMPORTS = ("from bpe_labs import speed_bpe_tokenizer as hidden_speed",
                "from bpe_labs.speed import times_the_unit as hidden_times_the_unit")
HIDDEN = {
    ("africa_galore", "learn_fast"): (
        "_times_the_unit(", "_speed.speed_corpus(", "_speed.count_words(", "_speed.MERGES",
        "_speed.MULTIPLE)", "cpu_timed_call_within(",
        "from bpe_labs import speed_africa_galore as _speed",
        "from bpe_labs.speed import times_the_unit as _times_the_unit"),
    ("bpe_tokenizer", "train_bpe"): ("hidden_times_the_unit(", "hidden_speed.one_pass(",
                                     "hidden_speed.speed_text(", "hidden_speed.TRAIN_MULTIPLE",
                                     "256 + 1 + hidden_speed.MERGES", *LAB7_IMPORTS),
    ("bpe_tokenizer", "encode"): ("hidden_times_the_unit(", "hidden_speed.encode_case(",
                                  "hidden_speed.passes_over(", "hidden_speed.ENCODE_MULTIPLE)",
                                  *LAB7_IMPORTS),
    **{("fast_bpe", part): ("_times_the_unit(", "_speed.speed_words(", "_speed.recounts(",
                            "_speed.MERGES", "_speed.MULTIPLE)",
                            "from bpe_labs import speed_fast_bpe as _speed",
                            "from bpe_labs.speed import times_the_unit as _times_the_unit")
       for part in ("train_fast", "train_fast_lexicographic")},
}
# part -> what its visible check must call (the check function's source)
CHECKED = {
    ("africa_galore", "check_learn_fast"): ("_times_the_unit(", "_speed_corpus(", "_count_words(",
                                            "_AFRICA_MERGES", "_AFRICA_MULTIPLE)"),
    ("bpe_tokenizer", "check_train"): ("_times_the_unit(", "_speed_text(", "_one_pass(",
                                       "_TRAIN_MULTIPLE)", "256 + 1 + _SPEED_MERGES"),
    ("bpe_tokenizer", "check_encode"): ("_times_the_unit(", "_encode_case(", "_passes_over(",
                                        "_ENCODE_MULTIPLE)"),
    ("fast_bpe", "check_train_fast"): ("_times_the_unit(", "_speed_words(", "_recounts(",
                                       "_FAST_MERGES", "_FAST_MULTIPLE)"),
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


def check_functions(lab: str) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in ast.parse(cell(lab, "feedback_helpers")).body
            if isinstance(node, ast.FunctionDef)}


@pytest.mark.parametrize("lab", sorted(COPIES))
def test_the_check_holds_the_rule_of_bpe_labs_speed_word_for_word(lab):
    copies, numbers = COPIES[lab]
    renames = {copy: name for copy, (_, name) in numbers.items()}
    check = check_functions(lab)
    for copy, original in copies.items():
        module_function = ast.parse(inspect.getsource(original)).body[0]
        assert body(check[copy], renames) == body(module_function, {}), (
            f"{lab}: {copy} is not {original.__module__}.{original.__name__}"
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
    assert {name: namespace.get(name) for name in numbers} == {
        name: getattr(module, value) for name, (module, value) in numbers.items()}


@pytest.mark.parametrize("lab, check", sorted(CHECKED))
def test_the_check_judges_by_the_copied_rule(lab, check):
    source = ast.unparse(check_functions(lab)[check])
    for used in CHECKED[(lab, check)]:
        assert used in source, used
    assert "_best_of_three" not in source and "simple / 4" not in source, (
        "a second speed rule in the check"
    )


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

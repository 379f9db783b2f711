"""A part's message is written from the grader's own facts: the failing assert's text as the
hidden-test source writes it, never a value that came out of a kernel (autograder/verdicts.py).

Reference: hidden-test sources written here, run in this process the way check.py runs them, with a
"returned" value that stands for what a kernel sent back after it had seen hidden inputs.
"""
from __future__ import annotations

import pytest

from autograder import verdicts

SOURCE = '''
_cases = [("abc", "a case's own rule, written in the source"), ("abd", "another rule")]
for _text, _why in _cases:
    _got = RETURNED
    assert _got == "right", f"wrong answer: {_why}"
'''
QUOTES_THE_VALUE = '''
_got = RETURNED
assert _got == "right", f"tokenize('hello', ...) returned {_got!r}, the task shows 'right'"
'''
CONCATENATED = '''
_rule = "stop when no pair is left"
assert RETURNED == "right", "learn_bpe must " + _rule
'''


def message(source: str, returned) -> str:
    namespace = {"RETURNED": returned}
    code = compile(source, "<hidden tests: part>", "exec")
    with pytest.raises(AssertionError) as failed:
        exec(code, namespace)
    return verdicts.assertion_text(failed.value, source, code.co_filename)


def test_the_source_constants_of_a_message_are_shown():
    assert message(SOURCE, "wrong") == "wrong answer: a case's own rule, written in the source"
    assert message(CONCATENATED, "wrong") == "learn_bpe must stop when no pair is left"


def test_a_value_the_kernel_returned_is_never_shown_however_it_is_spelled():
    secret = "ZZSECRET 4812 hidden input, remembered and returned on the public example"
    said = message(QUOTES_THE_VALUE, secret)
    assert said == "tokenize('hello', ...) returned …, the task shows 'right'"
    assert "ZZSECRET" not in said and "4812" not in said


def test_an_assert_the_source_does_not_have_gets_the_generic_sentence():
    """An AssertionError from elsewhere (the student's own code raised it) never shows its text."""
    def student_code():
        raise AssertionError("ZZSECRET")

    try:
        student_code()
    except AssertionError as error:
        assert verdicts.assertion_text(error, SOURCE, "<hidden tests: part>") == verdicts.GENERIC


def test_too_slow_says_the_measured_multiple_and_the_sources_advice_only():
    source = 'assert_fast_enough(1, 1, 10, "count each distinct word once")'
    assert verdicts.assertion_text(
        verdicts.TooSlow("count each distinct word once", 23.456, 10), source, "x"
    ) == (
        "count each distinct word once (your code took 23.5× the reference's time, measured in "
        "this grading run; the limit is 10×)"
    )
    assert verdicts.assertion_text(verdicts.TooSlow("ZZSECRET", 2, 1), source, "x").startswith(
        "your code is too slow ("
    )


def test_an_error_met_through_a_bridge_is_named_after_the_students_method():
    """Lab 7's hidden tests call ``Tokenizer.encode`` through the given ``tokenizer_results``:
    the feedback names the method (was: the bridge, because the renaming read an older form of
    the mark)."""
    from autograder.course_interface import StudentError, mark_student_error, student_error
    from bpe_labs.hidden import reported_as

    error = mark_student_error(KeyError("the kernel's own text"),
                               StudentError("tokenizer_results", "KeyError"))
    with pytest.raises(KeyError) as caught, reported_as("tokenizer_results", "Tokenizer.encode"):
        raise error
    assert (
        verdicts.raised(student_error(caught.value))
        == "on a hidden test input, Tokenizer.encode raised KeyError"
    )
    # another function's error keeps its name
    other = mark_student_error(ValueError("x"), StudentError("pretokenize", "ValueError"))
    with pytest.raises(ValueError) as caught, reported_as("tokenizer_results", "Tokenizer.encode"):
        raise other
    assert (
        verdicts.raised(student_error(caught.value))
        == "on a hidden test input, pretokenize raised ValueError"
    )

"""What the feedback says of a graded part: written by the grader, from its own facts only.

Once a hidden input has reached a kernel, nothing that kernel says may reach a student, in any
form: an exception's text, a class name the student made, a value it returned (a function can
remember hidden inputs and return them, encoded, on the public example). So a part's message is
built here from the grader's own facts and never from text that came out of a kernel:

* a failed ``assert`` of the hidden tests: the text its author wrote in the hidden-test source.
  An f-string's parts are kept when they are the source's own string constants (the rule of the
  case being checked, ``f"wrong metadata: {_why}"``); any other value (what the student's code
  returned, an exception's message) is left out, shown as ``…``;
* a check that the student's code was too slow: the grader's own measurements (:class:`TooSlow`);
* an exception the student's function raised: the function the hidden test called and the class,
  if it is a built-in one (``tokenize raised ValueError``), never its message;
* a time-out, a dead kernel, a part out of time: fixed sentences.

What the student's code did on the *public* example is shown from the visible check, which ran
before any hidden input existed in a kernel (``grading/grade.py``).
"""
from __future__ import annotations

import ast
import functools

GENERIC = "a hidden check failed"
REFERENCE_TIME = "the reference's time"  # what a speed check's multiple counts, unless it says
LEFT_OUT = "…"  # stands for a value the grader does not repeat


class TooSlow(AssertionError):
    """A hidden test's speed check failed. The message is the grader's: the advice (a string
    constant of the hidden-test source) and the measured multiple of the reference's time.

    >>> str(TooSlow("count each distinct word once", 12.34, 8))  # doctest: +NORMALIZE_WHITESPACE
    "count each distinct word once (your code took 12.3× the reference's time, measured in this
    grading run; the limit is 8×)"
    >>> TooSlow("once", 60, 10, unit="one pass's time").text("once")
    "once (your code took 60× one pass's time, measured in this grading run; the limit is 10×)"
    """

    def __init__(self, advice: str, multiple: float, limit: float, unit: str = REFERENCE_TIME):
        self.advice, self.multiple, self.limit = advice, float(multiple), float(limit)
        self.unit = unit  # what the multiple counts: the reference's time, or the lab's own unit
        super().__init__(self.text(advice))

    def text(self, advice: str, unit: str | None = None) -> str:
        return (
            f"{advice} (your code took {_times(self.multiple)} {unit or self.unit}, measured in "
            f"this grading run; the limit is {_times(self.limit)})"
        )


def _times(multiple: float) -> str:
    """``12.34 -> '12.3×'``, ``2.468 -> '2.47×'``: three significant digits at most (a few bits of a
    kernel's timing)."""
    if multiple != multiple or multiple == float("inf"):
        return "many times"
    return f"{float(f'{multiple:.3g}'):g}×"


@functools.lru_cache(maxsize=None)
def _source_facts(hidden_tests: str) -> tuple[frozenset[str], tuple[ast.Assert, ...]]:
    """The string constants of a part's hidden tests, and its ``assert`` statements."""
    tree = ast.parse(hidden_tests)
    constants = frozenset(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    )
    asserts = tuple(node for node in ast.walk(tree) if isinstance(node, ast.Assert))
    return constants, asserts


def _failing_frame(error: BaseException, filename: str):
    """The innermost frame of the hidden tests' own code in the error's traceback, and its line."""
    found, traceback = None, error.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == filename:
            found = (traceback.tb_frame, traceback.tb_lineno)
        traceback = traceback.tb_next
    return found


def assertion_text(error: AssertionError, hidden_tests: str, filename: str) -> str:
    """The message of the hidden test's failing ``assert``, rendered from the hidden-test source.

    Only text of the source itself is shown: a constant message as written; in an f-string, a name
    whose value is one of the source's string constants (the case's rule), every other value as
    ``…``.
    """
    if isinstance(error, TooSlow):
        constants, _ = _source_facts(hidden_tests)
        advice = error.advice if error.advice in constants else "your code is too slow"
        return error.text(advice, error.unit if error.unit in constants else REFERENCE_TIME)
    found = _failing_frame(error, filename)
    if found is None:
        return GENERIC
    frame, line = found
    constants, asserts = _source_facts(hidden_tests)
    covering = [node for node in asserts if node.lineno <= line <= (node.end_lineno or node.lineno)]
    if not covering or covering[-1].msg is None:
        return GENERIC
    return _render(covering[-1].msg, frame, constants) or GENERIC


def _render(node: ast.AST, frame, constants: frozenset[str]) -> str:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else LEFT_OUT
    if isinstance(node, ast.JoinedStr):
        return "".join(_render(value, frame, constants) for value in node.values)
    if isinstance(node, ast.FormattedValue):
        text = _render(node.value, frame, constants)
        return repr(text) if node.conversion == ord("r") and text != LEFT_OUT else text
    if isinstance(node, ast.Name):
        value = frame.f_locals.get(node.id, frame.f_globals.get(node.id))
        return value if type(value) is str and value in constants else LEFT_OUT
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _render(node.left, frame, constants) + _render(node.right, frame, constants)
    return LEFT_OUT


def raised(said: object) -> str:
    """``on a hidden test input, tokenize raised ValueError``: what the feedback may say of an
    exception from the student's code (a :class:`~autograder.course_interface.StudentError`, which
    the grader writes: never the kernel's own text). Typed ``object`` so that this module, which
    the course interface imports for :class:`TooSlow`, imports nothing of it back."""
    return f"on a hidden test input, {said}"


def did_not_finish(why: str) -> str:
    """``why``: a :class:`~autograder.kernel.session.CallTimeout`'s text, which the grader alone
    writes (``did not finish within 10 s``, or that the notebook's time was used up)."""
    return f"your code {why} on a hidden test input: is there a loop that never ends?"


def out_of_time(seconds: float) -> str:
    return f"the hidden tests of this part ran out of time ({seconds:g} s): your code is too slow"


KERNEL_DIED = (
    "the kernel died or stopped answering while running your code (memory limit, exit or crash)"
)
NOT_GRADED = (
    "this part could not be graded: the kernel stopped answering while the grader prepared it"
)
NOT_CHECKABLE = (
    "what your code returned could not be checked: compare its type and shape with the task"
)

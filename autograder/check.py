"""Run a part's hidden tests in the grader's process, against proxies of the student's functions.

The hidden-test source comes from the solution notebook. Each free name of it (used, never bound
in the cell, not a builtin) is the student's: a function becomes a :class:`StudentFunction` that
calls into the kernel; a variable is fetched as a plain value. The student's code never sees the
hidden tests, their inputs or the reference, and cannot reach the comparison.
"""
from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass

from autograder.kernel import CallTimeout, KernelDied, KernelSession, StudentRaised
from autograder.labs import Part, free_names
from autograder.stand_ins import failing_upstream, note, standing_in


@dataclass
class PartResult:
    part_id: str
    score: float
    max_score: float
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score


ALL_PASSED = "all checks passed"  # a part's message when it earned its points


class PartTimeUp(Exception):
    pass


class StudentFunction:
    """Calls the student's function of that name in the kernel; returns plain values."""

    def __init__(self, session: KernelSession, name: str, deadline: float):
        self.session, self.__name__, self.deadline = session, name, deadline

    def __call__(self, *args, **kwargs):
        if time.monotonic() > self.deadline:
            raise PartTimeUp()
        return self.session.call(self.__name__, *args, **kwargs)

    def call_with_time_limit(self, seconds: float, *args, **kwargs):
        """One call with its own time limit: what a course's ``call_with_time_limit`` helper for hidden tests calls."""
        if time.monotonic() > self.deadline:
            raise PartTimeUp()
        usual = self.session.limits
        self.session.limits = dataclasses.replace(usual, call_seconds=max(seconds, usual.call_seconds))
        try:
            return self.session.call(self.__name__, *args, **kwargs)
        finally:
            self.session.limits = usual

    def call_each(self, argument_lists: list, **keywords) -> list:
        """Many calls in one round trip: what a course's ``call_each`` helper for hidden tests calls."""
        if time.monotonic() > self.deadline:
            raise PartTimeUp()
        return self.session.call_each(self.__name__, argument_lists, within=self.deadline - time.monotonic(),
                                      keywords=keywords)


@functools.lru_cache(maxsize=None)
def hidden_test_names(hidden_tests: str) -> tuple[str, ...]:
    """The names a part's hidden tests take from the notebook (parsed once per process)."""
    return tuple(free_names(hidden_tests))


@functools.lru_cache(maxsize=None)
def _compiled(hidden_tests: str, part_id: str):
    # optimize=0 keeps the asserts even when the grader runs under python -O.
    return compile(hidden_tests, f"<hidden tests: {part_id}>", "exec", optimize=0)


def run_part(session: KernelSession, part: Part, seconds: float = 60.0) -> PartResult:
    """Score one part: full points when every hidden check passes, else zero and why.

    One bug costs one part: the earlier answers this part may rely on that failed their own parts
    are replaced, for this part only, by the reference (``stand_ins.py``); the message says so.
    """
    helpers = failing_upstream(session, part)
    try:
        with standing_in(session, helpers) as used:
            result = _run_part(session, part, seconds)
    except (KernelDied, CallTimeout) as error:  # the stand-ins could not be placed
        result, used = PartResult(part.part_id, 0, part.points, f"this part could not be graded ({error})"), set()
    session.part_passed[part.part_id] = result.passed
    said = note(part, helpers, used)
    if said:
        result.message = f"{said}; {result.message}"
    return result


def _run_part(session: KernelSession, part: Part, seconds: float) -> PartResult:
    deadline = time.monotonic() + seconds
    namespace: dict = {"__name__": f"hidden_tests_{part.part_id}"}
    try:
        for name in hidden_test_names(part.hidden_tests):
            kind = session.describe(name)
            if kind == "missing":
                return PartResult(part.part_id, 0, part.points,
                                  f"`{name}` is not defined in your notebook: did the cell that defines it run without errors?")
            namespace[name] = StudentFunction(session, name, deadline) if kind == "function" else session.fetch(name)
        exec(_compiled(part.hidden_tests, part.part_id), namespace)
    except AssertionError as failed:
        return PartResult(part.part_id, 0, part.points, str(failed) or "a hidden check failed")
    except CallTimeout as slow:
        return PartResult(part.part_id, 0, part.points, f"your code {slow} on a hidden test input: is there a loop that never ends?")
    except PartTimeUp:
        return PartResult(part.part_id, 0, part.points, f"the hidden tests of this part ran out of time ({seconds:g} s): your code is too slow")
    except KernelDied as died:
        return PartResult(part.part_id, 0, part.points, f"{died} while running your code (memory limit, exit or crash)")
    except Exception as error:
        said = getattr(error, "autograder_student", None)
        if said:
            return PartResult(part.part_id, 0, part.points, f"on a hidden test input, {said}")
        if isinstance(error, StudentRaised):
            return PartResult(part.part_id, 0, part.points, f"on a hidden test input, your code raised {error}")
        return PartResult(part.part_id, 0, part.points,
                          f"what your code returned could not be checked ({type(error).__name__}): compare its type and shape with the task")
    return PartResult(part.part_id, part.points, part.points, ALL_PASSED)

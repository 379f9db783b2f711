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
from dataclasses import dataclass, replace

from autograder import verdicts
from autograder.kernel import CallTimeout, KernelDied, KernelSession
from autograder.labs import Part, free_names
from autograder.stand_ins import STAND_IN_LOG, STAND_IN_SECONDS, failing_upstream, note, standing_in


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

    def timed_call(self, seconds: float, *args, **kwargs) -> tuple:
        """``(result, seconds, round trips)``: one call (with a time limit of at least ``seconds``), its
        time on the grader's clock less the grader's own time answering the stand-ins it called, and, for
        each stand-in call, the time from the kernel's previous word to its request (the call's start, or
        the previous answer): the round trip, and whatever the student's code did in between. What a
        course's ``timed_call`` helper calls."""
        first, service = len(STAND_IN_LOG), STAND_IN_SECONDS[0]
        started = time.perf_counter()
        result = self.call_with_time_limit(seconds, *args, **kwargs)
        elapsed = time.perf_counter() - started
        log = STAND_IN_LOG[first:]
        gaps = [arrived - previous for (arrived, _), previous in zip(log, [started] + [answered for _, answered in log])]
        return result, elapsed - (STAND_IN_SECONDS[0] - service), gaps

    def call_each(self, argument_lists: list, with_arguments: bool = False, **keywords) -> list:
        """Many calls in one round trip: what a course's ``call_each`` helper for hidden tests calls."""
        if time.monotonic() > self.deadline:
            raise PartTimeUp()
        return self.session.call_each(self.__name__, argument_lists, within=self.deadline - time.monotonic(),
                                      keywords=keywords, with_arguments=with_arguments)


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

    One bug costs one part, and a stand-in never costs a student what their own code earns: when an
    earlier answer this part may rely on failed its own part, the part is graded with the student's
    own functions, and, if that fails, once more with the reference in place of each failing answer
    (``stand_ins.py``); it keeps the better score. A stand-in waives nothing: the same hidden tests,
    speed checks included, run both times. The message says which way earned the points.
    """
    helpers = failing_upstream(session, part)
    own = _graded(session, part, seconds)
    result = own
    if helpers and not own.passed:
        try:
            with standing_in(session, helpers) as used:
                stood = _graded(session, part, seconds)
        except (KernelDied, CallTimeout):  # the stand-ins could not be placed
            stood, used = PartResult(part.part_id, 0, part.points, verdicts.NOT_GRADED), set()
        said = note(part, helpers, used)
        if said and stood.score > own.score:
            result = replace(stood, message=f"{said}; {stood.message}")
        elif said:  # both ways failed: what the part's own code got wrong, with the earlier bug ruled out
            result = replace(own, message=f"{said}, and with yours; both ways: {stood.message}")
    session.part_passed[part.part_id] = result.passed
    return result


def _graded(session: KernelSession, part: Part, seconds: float) -> PartResult:
    """The part's hidden tests once; the message is the grader's own (``verdicts.py``)."""
    deadline = time.monotonic() + seconds
    namespace: dict = {"__name__": f"hidden_tests_{part.part_id}"}
    failed = functools.partial(PartResult, part.part_id, 0, part.points)
    code = _compiled(part.hidden_tests, part.part_id)
    try:
        for name in hidden_test_names(part.hidden_tests):
            kind = session.describe(name)
            if kind == "missing":
                return failed(f"`{name}` is not defined in your notebook: did the cell that defines it run without errors?")
            namespace[name] = StudentFunction(session, name, deadline) if kind == "function" else session.fetch(name)
        exec(code, namespace)
    except PartTimeUp:
        return failed(verdicts.out_of_time(seconds))
    except CallTimeout as slow:  # the grader's own words: which limit ran out
        return failed(verdicts.did_not_finish(str(slow)))
    except KernelDied:
        return failed(verdicts.KERNEL_DIED)
    except Exception as error:
        if getattr(error, "autograder_student", None):  # raised by the student's function (an AssertionError too)
            return failed(verdicts.raised(error))
        if isinstance(error, AssertionError):
            return failed(verdicts.assertion_text(error, part.hidden_tests, code.co_filename))
        return failed(verdicts.NOT_CHECKABLE)
    return PartResult(part.part_id, part.points, part.points, ALL_PASSED)

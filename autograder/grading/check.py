"""Run a part's hidden tests in the grader's process, against proxies of the student's functions.

The hidden-test source comes from the solution notebook. Each free name of it (used, never bound
in the cell, not a builtin) is the student's: a function becomes a :class:`StudentFunction` that
calls into the kernel; a variable is fetched as a plain value. The student's code never sees the
hidden tests, their inputs or the reference, and cannot reach the comparison.
"""

from __future__ import annotations

import functools
import time
import types
from dataclasses import replace

from autograder import verdicts
from autograder.course_interface import STAND_INS, GraderFunction, TimedCall, student_error
from autograder.kernel.session import CallResults, CallTimeout, KernelDied, KernelSession
from autograder.labs import Part, free_names
from autograder.kernel.limits import PART_SECONDS
from autograder.grading.result import PartScore, Verdict
from autograder.grading.stand_ins import failing_upstream, note, standing_in


ALL_PASSED = "all checks passed"  # a part's message when it earned its points


class PartTimeUp(Exception):
    pass


class StudentFunction(GraderFunction):
    """Calls the student's function of that name in the kernel; returns plain values (what a hidden
    test is given for it: ``course_interface.py``)."""

    def __init__(self, session: KernelSession, name: str, deadline: float):
        self.session, self.__name__, self.deadline = session, name, deadline

    def __call__(self, *args, **kwargs):
        if time.monotonic() > self.deadline:
            raise PartTimeUp()
        return self.session.call(self.__name__, *args, **kwargs)

    def call_with_time_limit(self, seconds: float, *args, **kwargs):
        """One call with its own time limit: what a course's ``call_with_time_limit`` helper
        for hidden tests calls."""
        return self._call_within(seconds, True, args, kwargs)

    def _call_within(self, seconds: float, at_least_usual: bool, args: tuple, kwargs: dict):
        if time.monotonic() > self.deadline:
            raise PartTimeUp()
        with self.session.limits_for(seconds, at_least_usual):
            return self.session.call(self.__name__, *args, **kwargs)

    def timed_call(self, seconds: float, *args, **kwargs) -> TimedCall:
        """One call (with a time limit of at least ``seconds``): its result, its time on the
        grader's clock less the grader's own time answering the stand-ins it called, and, for each
        stand-in call, the time from the kernel's previous word to its request (the call's start,
        or the previous answer): the round trip, and whatever the student's code did in between.
        What a course's ``timed_call`` helper calls."""
        return self._timed(seconds, True, args, kwargs)

    def timed_call_within(self, seconds: float, *args, **kwargs) -> TimedCall:
        """:meth:`timed_call`, cut at ``seconds`` even below the usual limit (a speed check's
        limit: past it the call is too slow, known at the limit). What a course's
        ``timed_call_within`` helper calls."""
        return self._timed(seconds, False, args, kwargs)

    def cpu_timed_call_within(self, seconds: float, *args, **kwargs) -> TimedCall:
        """One call cut at ``seconds``: its result, the CPU time the kernel's processes used
        meanwhile (read from /proc by this process), and its stand-ins' round trips. What a course's
        ``cpu_timed_call_within`` helper calls."""
        before = self.session.kernel_cpu_seconds()
        timed = self._timed(seconds, False, args, kwargs)
        after = self.session.kernel_cpu_seconds()
        if before is None or after is None:  # the kernel's processes unknown: the clock's time
            return timed
        return TimedCall(timed.result, max(after - before, 0.0), timed.round_trips)

    def _timed(self, seconds: float, at_least_usual: bool, args: tuple, kwargs: dict) -> TimedCall:
        first, service = len(STAND_INS.answers), STAND_INS.seconds
        started = time.perf_counter()
        result = self._call_within(seconds, at_least_usual, args, kwargs)
        elapsed = time.perf_counter() - started
        log = STAND_INS.answers[first:]
        previous_words = [started] + [answer.answered for answer in log]
        round_trips = [answer.arrived - previous for answer, previous in zip(log, previous_words)]
        return TimedCall(result, elapsed - (STAND_INS.seconds - service), round_trips)

    def call_each(
        self, argument_lists: list, with_arguments: bool = False, **keywords
    ) -> CallResults:
        """Many calls in one round trip: what a course's ``call_each`` helper for hidden
        tests calls."""
        if time.monotonic() > self.deadline:
            raise PartTimeUp()
        return self.session.call_each(
            self.__name__,
            argument_lists,
            within=self.deadline - time.monotonic(),
            keywords=keywords,
            with_arguments=with_arguments,
        )


@functools.lru_cache(maxsize=None)
def hidden_test_names(hidden_tests: str) -> tuple[str, ...]:
    """The names a part's hidden tests take from the notebook (parsed once per process)."""
    return tuple(free_names(hidden_tests))


@functools.lru_cache(maxsize=None)
def _compiled(hidden_tests: str, part_id: str) -> types.CodeType:
    # optimize=0 keeps the asserts even when the grader runs under python -O.
    return compile(hidden_tests, f"<hidden tests: {part_id}>", "exec", optimize=0)


def run_part(session: KernelSession, part: Part, seconds: float = PART_SECONDS) -> PartScore:
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
            not_graded = PartScore(part.part_id, 0, part.points, verdicts.NOT_GRADED,
                                   verdict=Verdict.NOT_GRADED)
            stood, used = not_graded, set()
        said = note(part, helpers, used)
        if said and stood.score > own.score:
            result = replace(stood, message=f"{said}; {stood.message}")
        elif said:
            # both ways failed: what the part's own code got wrong, with the earlier bug ruled out
            result = replace(own, message=f"{said}, and with yours; both ways: {stood.message}")
    session.part_passed[part.part_id] = result.passed
    return result


def _graded(session: KernelSession, part: Part, seconds: float) -> PartScore:
    """The part's hidden tests once; the message is the grader's own (``verdicts.py``)."""
    deadline = time.monotonic() + seconds
    namespace: dict[str, object] = {"__name__": f"hidden_tests_{part.part_id}"}

    def failed(message: str, verdict: Verdict) -> PartScore:
        return PartScore(part.part_id, 0, part.points, message, verdict=verdict)

    code = _compiled(part.hidden_tests, part.part_id)
    try:
        for name in hidden_test_names(part.hidden_tests):
            kind = session.describe(name)
            if kind == "missing":
                return failed(
                    f"`{name}` is not defined in your notebook: "
                    "did the cell that defines it run without errors?",
                    Verdict.MISSING,
                )
            namespace[name] = (
                StudentFunction(session, name, deadline)
                if kind == "function"
                else session.fetch(name)
            )
        exec(code, namespace)
    except PartTimeUp:
        return failed(verdicts.out_of_time(seconds), Verdict.OUT_OF_TIME)
    except CallTimeout as slow:  # the grader's own words: which limit ran out
        return failed(verdicts.did_not_finish(str(slow)), Verdict.DID_NOT_FINISH)
    except KernelDied:
        return failed(verdicts.KERNEL_DIED, Verdict.KERNEL_DIED)
    except Exception as error:
        said = student_error(error)
        if said is not None:  # raised by the student's function (an AssertionError too)
            return failed(verdicts.raised(said), Verdict.RAISED)
        if isinstance(error, AssertionError):
            return failed(
                verdicts.assertion_text(error, part.hidden_tests, code.co_filename),
                Verdict.TOO_SLOW if isinstance(error, verdicts.TooSlow) else Verdict.FAILED_CHECK,
            )
        return failed(verdicts.NOT_CHECKABLE, Verdict.NOT_CHECKABLE)
    return PartScore(part.part_id, part.points, part.points, ALL_PASSED, verdict=Verdict.PASSED)

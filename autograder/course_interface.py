"""What a course and the engine give each other: the one place both sides import.

A course gives the engine a :class:`~autograder.course.Course` (its folders, its labs' metadata key,
the modules its hidden tests import; ``course.py``) and, in its solution notebooks, the hidden
tests.

The engine gives a course's hidden tests, while it grades:

* each of the student's functions as a :class:`GraderFunction`: calling it calls the student's
  function in the kernel with plain values; :func:`call_each`, :func:`call_with_time_limit` and
  :func:`timed_call` reach its batched, longer-limited and timed forms, and do the plain thing on
  any other function (the same hidden tests run under nbval, in the student's own kernel);
* for an exception a student's function raised, a :class:`StudentError` (the function the hidden
  test called and the exception's class, never its message: ``verdicts.py``), which
  :func:`student_error` reads and :func:`report_as` renames;
* :class:`~autograder.verdicts.TooSlow`, the failure of a speed check, whose message the grader
  writes.

Nothing here imports the kernel's libraries: a hidden test's helpers import it in any process.

    >>> call_each(len, [("ab",), ([1, 2, 3],)])
    [2, 3]
    >>> call_with_time_limit(sorted, 5, "ba")
    ['a', 'b']
    >>> timed_call(sorted, 5, "ba")[0], timed_call(sorted, 5, "ba")[2]
    (['a', 'b'], [])
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, NamedTuple

from autograder.course import Course
from autograder.verdicts import TooSlow

__all__ = [
    "Course",
    "GraderFunction",
    "StudentError",
    "TimedCall",
    "TooSlow",
    "call_each",
    "call_with_time_limit",
    "report_as",
    "student_error",
    "timed_call",
    "timed_call_within",
    "cpu_timed_call_within",
]


class TimedCall(NamedTuple):
    """What :func:`timed_call` gives: ``result, seconds, round_trips = timed_call(...)``."""

    result: Any
    seconds: float  # the call's time, less the grader's own time answering stand-ins
    round_trips: list[float]  # one per stand-in call: the time since the kernel's previous word


class GraderFunction(abc.ABC):
    """A student's function as a hidden test sees it in the grader (``check.StudentFunction``)."""

    __name__: str

    @abc.abstractmethod
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """One call in the kernel, with the usual time limit of a call."""

    @abc.abstractmethod
    def call_each(self, argument_lists: list, with_arguments: bool = False, **keywords: Any) -> Any:
        """Many calls in one round trip; see :func:`call_each`."""

    @abc.abstractmethod
    def call_with_time_limit(self, seconds: float, *args: Any, **kwargs: Any) -> Any:
        """One call with a time limit of at least ``seconds``."""

    @abc.abstractmethod
    def timed_call(self, seconds: float, *args: Any, **kwargs: Any) -> TimedCall:
        """The result, the seconds and the stand-in round trips; see :func:`timed_call`."""

    @abc.abstractmethod
    def timed_call_within(self, seconds: float, *args: Any, **kwargs: Any) -> TimedCall:
        """:meth:`timed_call` cut at ``seconds``; see :func:`timed_call_within`."""

    @abc.abstractmethod
    def cpu_timed_call_within(self, seconds: float, *args: Any, **kwargs: Any) -> TimedCall:
        """The call's CPU time, cut at ``seconds``; see :func:`cpu_timed_call_within`."""


def call_each(
    function: Callable, argument_lists: list, with_arguments: bool = False, **keywords: Any
) -> list:
    """``[function(*args, **keywords) for args in argument_lists]``, for a ``for`` loop over the
    cases.

    Against a student's function in the grader this is one round trip to the kernel instead of one
    per input (about 7 ms each): use it for the many inputs of a part. Like the loop, each call has
    its own time limit, and the error of call k is raised when the loop reaches case k (the results
    are read lazily; the calls after it are not made). With ``with_arguments``, each result is
    ``(value, arguments)``: the arguments as the call left them, to see whether it changed its
    input.

    >>> call_each(list.pop, [([1, 2],)], with_arguments=True)
    [(2, [[1]])]
    """
    if isinstance(function, GraderFunction):
        return function.call_each(
            [tuple(args) for args in argument_lists], with_arguments=with_arguments, **keywords
        )
    if with_arguments:
        return [
            (function(*arguments, **keywords), arguments) for arguments in map(list, argument_lists)
        ]
    return [function(*args, **keywords) for args in argument_lists]


def call_with_time_limit(function: Callable, seconds: float, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``; against a student's function in the grader, with its own time
    limit of ``seconds`` (at least the usual one) instead of the usual one: for one large case whose
    size is the point (an algorithm that is too slow must not finish, a right one must, with room to
    spare)."""
    if isinstance(function, GraderFunction):
        return function.call_with_time_limit(seconds, *args, **kwargs)
    return function(*args, **kwargs)


def timed_call(function: Callable, seconds: float, *args: Any, **kwargs: Any) -> TimedCall:
    """The result, the seconds taken and the round trips of one call (a :class:`TimedCall`), with a
    time limit of at least ``seconds``.

    Against a student's function in the grader, the time is on the grader's clock, less the
    grader's own time answering the stand-ins the call used (``autograder/grading/stand_ins.py``),
    and each stand-in call's round trip is reported (with whatever the student's code did since the
    kernel last heard from the grader). Outside the grader: the call's time, and no round trip.
    """
    if isinstance(function, GraderFunction):
        return function.timed_call(seconds, *args, **kwargs)
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return TimedCall(result, time.perf_counter() - started, [])


def timed_call_within(function: Callable, seconds: float, *args: Any, **kwargs: Any) -> TimedCall:
    """:func:`timed_call`, but against a student's function in the grader the call is cut at
    ``seconds``, even below the usual limit of a call (it raises ``CallTimeout`` then): a speed
    check's cut at its limit, so that a too-slow answer costs the limit, not more. Outside the
    grader: the plain call, timed.

    >>> timed_call_within(sorted, 0.5, "ba").result
    ['a', 'b']
    """
    if isinstance(function, GraderFunction):
        return function.timed_call_within(seconds, *args, **kwargs)
    return timed_call(function, seconds, *args, **kwargs)


def cpu_timed_call_within(function: Callable, seconds: float, *args: Any, **kwargs: Any
                          ) -> TimedCall:
    """:func:`timed_call_within`, but the seconds are the **CPU time** the call used, not the time
    on a clock: what a speed verdict compares with a unit of work timed the same way
    (``time.thread_time``), so that a busy machine, which slows every clock, moves neither. Against
    a student's function in the grader: the CPU time of the kernel's processes during the call
    (read by the grader from /proc: nothing in the kernel can change it; waiting for a stand-in's
    answer uses none), cut at ``seconds`` on the clock (give the cut room for a busy machine).
    Outside the grader: the plain call, its ``time.process_time``.

    >>> cpu_timed_call_within(sum, 1.0, range(10**6)).seconds < 1.0
    True
    """
    if isinstance(function, GraderFunction):
        return function.cpu_timed_call_within(seconds, *args, **kwargs)
    started = time.process_time()
    result = function(*args, **kwargs)
    return TimedCall(result, time.process_time() - started, [])


@dataclass(frozen=True)
class StudentError:
    """What the grader may say of an exception a student's function raised: the function the hidden
    test called, and the class if it is a built-in one (else :data:`OWN_CLASS`). Never the
    message."""

    function: str
    class_name: str

    def __str__(self) -> str:
        return f"{self.function} raised {self.class_name}"


OWN_CLASS = "an exception of a class of its own"  # how the feedback names a class the student made
_ATTRIBUTE = "autograder_student"  # where the grader puts a StudentError on the exception it raises


def student_error(error: BaseException) -> StudentError | None:
    """The :class:`StudentError` of an exception the student's function raised; None for any other.

    >>> error = KeyError("x")
    >>> student_error(error) is None
    True
    >>> str(student_error(mark_student_error(error, StudentError("decode", "KeyError"))))
    'decode raised KeyError'
    """
    said = getattr(error, _ATTRIBUTE, None)
    return said if isinstance(said, StudentError) else None


def mark_student_error(error: BaseException, said: StudentError) -> BaseException:
    """``error``, marked as raised by the student's code (the grader's side:
    ``kernel/calls.py``)."""
    setattr(error, _ATTRIBUTE, said)
    return error


def report_as(error: BaseException, bridge: str, method: str) -> None:
    """An error of the student's code met through the notebook function ``bridge`` (a given function
    that calls a method of the student's class for the hidden tests) is reported as ``method``'s.

    >>> error = mark_student_error(KeyError("x"), StudentError("tokenizer_results", "KeyError"))
    >>> report_as(error, "tokenizer_results", "Tokenizer.encode")
    >>> str(student_error(error))
    'Tokenizer.encode raised KeyError'
    """
    said = student_error(error)
    if said is not None and said.function == bridge:
        mark_student_error(error, replace(said, function=method))


class StandInAnswer(NamedTuple):
    """One stand-in call the grader answered, on its clock (``time.perf_counter()``)."""

    arrived: float  # when the kernel's request arrived
    answered: float  # when the grader's answer was sent


class StandInLog:
    """The stand-in calls the grader answered in this process (``grading/stand_ins.py`` records
    them): when each request arrived and was answered on the grader's clock, and the grader's time
    answering. A timed call takes the grader's time off the student's
    (``check.StudentFunction.timed_call``)."""

    def __init__(self) -> None:
        self.answers: list[StandInAnswer] = []
        self.seconds = 0.0

    def record(self, arrived: float, answered: float) -> None:
        self.answers.append(StandInAnswer(arrived, answered))
        self.seconds += answered - arrived


STAND_INS = StandInLog()

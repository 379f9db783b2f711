"""Helpers for hidden tests: they behave the same in the student's kernel (nbval, plain nbgrader)
and in the grader, where student functions are proxies that call into the kernel.

    >>> call_each(len, [("ab",), ([1, 2, 3],)])
    [2, 3]
    >>> call_each(sorted, [([2, 1],), ("ba",)], reverse=True)
    [[2, 1], ['b', 'a']]
"""
from __future__ import annotations

import contextlib
import functools
import random
import time

# What the engine gives hidden tests (autograder/course_interface.py): the same helpers work on a
# student's function in the grader and on a plain function (nbval, the student's own kernel).
from autograder.course_interface import (TooSlow, call_each, call_with_time_limit,
                                         cpu_timed_call_within, report_as, timed_call,
                                         timed_call_within)

__all__ = ["call_each", "call_with_time_limit", "timed_call", "timed_call_within",
           "cpu_timed_call_within", "cpu_allowed_for_stand_ins", "reported_as",
           "assert_fast_enough",
           "random_word_counts", "reference_answer",
           "reference_seconds"]


# What one stand-in call costs the kernel's CPU (sending the request, reading the answer): 0.4 ms
# measured on africa_galore's 500 calls. A CPU-timed call (``cpu_timed_call_within``) allows each
# of the first ``at_most`` calls this much; a throw-away call buys at most the rest.
STAND_IN_KERNEL_CPU = 0.001


def cpu_allowed_for_stand_ins(round_trips: list[float], at_most: int) -> float:
    """What a CPU-timed call's stand-in calls take off its CPU time: STAND_IN_KERNEL_CPU for each
    of the first ``at_most``.

    >>> cpu_allowed_for_stand_ins([0.002, 0.5, 0.003], 2)
    0.002
    """
    return min(len(round_trips), at_most) * STAND_IN_KERNEL_CPU


def assert_fast_enough(seconds: float, reference_seconds: float, multiple: float, advice: str,
                       floor: float = 0.0) -> None:
    """The speed check of a hidden test: ``seconds`` at most ``multiple`` times the reference's time
    (measured in this grading run), or ``floor`` seconds if that is more. The failure's message is
    the grader's: ``advice`` (a string constant of the hidden test) and the measured multiple."""
    if seconds > max(multiple * reference_seconds, floor):
        raise TooSlow(advice, seconds / max(reference_seconds, 1e-9), multiple)


@contextlib.contextmanager
def reported_as(bridge: str, method: str):
    """Within the block, an error of the student's code met through the notebook function ``bridge``
    (a given function that calls a method of the student's class for the hidden tests, which
    exchange plain values only) is reported as ``method``'s: "Tokenizer.encode raised KeyError", not
    "tokenizer_results raised KeyError". (Outside the grader nothing is renamed.)

    >>> from autograder.course_interface import StudentError, mark_student_error, student_error
    >>> error = mark_student_error(KeyError("x"), StudentError("tokenizer_results", "KeyError"))
    >>> try:
    ...     with reported_as("tokenizer_results", "Tokenizer.encode"):
    ...         raise error
    ... except KeyError as raised:
    ...     print(student_error(raised))
    Tokenizer.encode raised KeyError
    """
    try:
        yield
    except Exception as error:
        report_as(error, bridge, method)
        raise


_ANSWERS: dict = {}


def random_word_counts(
    seed: int, distinct: int, letters: str, shortest: int, longest: int, largest_count: int
) -> dict[str, int]:
    """``distinct`` random words of ``letters`` (``shortest`` to ``longest`` long), each with a
    random count from 1 to ``largest_count``; the same dict for the same seed, made once per process
    (a large hidden case is then not drawn again for every notebook). A copy is returned.

    >>> random_word_counts(7, 3, "ab", 1, 2, 9) == random_word_counts(7, 3, "ab", 1, 2, 9)
    True
    >>> len(random_word_counts(7, 3, "ab", 1, 2, 9))
    3
    """
    return dict(_random_word_counts(seed, distinct, letters, shortest, longest, largest_count))


@functools.lru_cache(maxsize=8)
def _random_word_counts(
    seed, distinct, letters, shortest, longest, largest_count
) -> dict[str, int]:
    rng = random.Random(seed)
    counts: dict[str, int] = {}
    # a word drawn again gets a new count, as the hidden tests always did
    while len(counts) < distinct:
        counts["".join(rng.choice(letters) for _ in range(rng.randint(shortest, longest)))] = (
            rng.randint(1, largest_count)
        )
    return counts


def reference_seconds(function, *args, **kwargs) -> float:
    """How long ``reference_answer(function, *args, **kwargs)`` took to compute, in this process
    (the reference's time for a timed hidden case, measured in the same grading run)."""
    reference_answer(function, *args, **kwargs)
    return _SECONDS[_key(function, args, kwargs)]


_SECONDS: dict = {}


def _key(function, args, kwargs):
    import pickle

    return (getattr(function, "__module__", None),
            getattr(function, "__qualname__", repr(function)),
            pickle.dumps((args, sorted(kwargs.items())), protocol=4))


def reference_answer(function, *args, **kwargs):
    """``function(*args, **kwargs)``, computed once per process for the same arguments (plain data):
    the reference answer to a large fixed hidden case is then not recomputed for every notebook a
    grading process grades. A copy is returned, so a check that changes it changes nothing else.

    >>> first = reference_answer(sorted, [3, 1, 2])
    >>> first == [1, 2, 3] and first is not reference_answer(sorted, [3, 1, 2])
    True
    """
    import copy

    key = _key(function, args, kwargs)
    if key not in _ANSWERS:
        started = time.perf_counter()
        _ANSWERS[key] = function(*args, **kwargs)
        _SECONDS[key] = time.perf_counter() - started
    return copy.deepcopy(_ANSWERS[key])

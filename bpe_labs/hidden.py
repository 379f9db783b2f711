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
import sys
import time


def call_each(function, argument_lists: list, with_arguments: bool = False, **keywords) -> list:
    """``[function(*args, **keywords) for args in argument_lists]``, for a ``for`` loop over the cases.

    Against a student's function in the grader this is one round trip to the kernel instead of one
    per input (about 7 ms each): use it for the many inputs of a part. Like the loop, each call has
    its own time limit, and the error of call k is raised when the loop reaches case k (the results
    are read lazily; the calls after it are not made). With ``with_arguments``, each result is
    ``(value, arguments)``: the arguments as the call left them, to see whether it changed its input.

    >>> call_each(list.pop, [([1, 2],)], with_arguments=True)
    [(2, [[1]])]
    """
    batch = getattr(function, "call_each", None)
    if batch is not None:
        return batch([tuple(args) for args in argument_lists], with_arguments=with_arguments, **keywords)
    if with_arguments:
        return [(function(*arguments, **keywords), arguments) for arguments in map(list, argument_lists)]
    return [function(*args, **keywords) for args in argument_lists]


def timed_call(function, seconds: float, *args, **kwargs) -> tuple:
    """``(result, seconds taken, round trips)`` of one call, with a time limit of at least ``seconds``.

    Against a student's function in the grader, the time is on the grader's clock, less the
    grader's own time answering the stand-ins the call used (``autograder/stand_ins.py``), and each
    stand-in call's round trip is reported (with whatever the student's code did since the kernel
    last heard from the grader): a speed check holds whether or not a stand-in was used, allowing for
    each round trip at most ``STAND_IN_ROUND_TRIP``, for at most as many calls as the task allows.
    Outside the grader: the call's time, and no round trip.
    """
    timed = getattr(function, "timed_call", None)
    if timed is not None:
        return timed(seconds, *args, **kwargs)
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - started, []


# The most one stand-in's round trip (the kernel asks, the grader answers) may take off a timed call:
# 1 to 7 ms were measured on a 2-core machine at load 1 to 8, 10 to 20 ms at load 25. A throw-away
# stand-in call buys at most this, minus its own cost; a check counts at most as many as the task allows.
STAND_IN_ROUND_TRIP = 0.010


def allowed_for_stand_ins(round_trips: list[float], at_most: int) -> float:
    """What a timed call's stand-in round trips take off its time: each up to ``STAND_IN_ROUND_TRIP``,
    the first ``at_most`` of them.

    >>> allowed_for_stand_ins([0.002, 0.5, 0.003], 2)
    0.012
    """
    return sum(min(trip, STAND_IN_ROUND_TRIP) for trip in round_trips[:at_most])


def assert_fast_enough(seconds: float, reference_seconds: float, multiple: float, advice: str,
                       floor: float = 0.0) -> None:
    """The speed check of a hidden test: ``seconds`` at most ``multiple`` times the reference's time
    (measured in this grading run), or ``floor`` seconds if that is more. The failure's message is
    the grader's: ``advice`` (a string constant of the hidden test) and the measured multiple."""
    from autograder.verdicts import TooSlow

    if seconds > max(multiple * reference_seconds, floor):
        raise TooSlow(advice, seconds / max(reference_seconds, 1e-9), multiple)


def call_with_time_limit(function, seconds: float, *args, **kwargs):
    """``function(*args, **kwargs)``; against a student's function in the grader, with its own time limit
    of ``seconds`` (at least the usual one) instead of the usual one: for one large case whose size is
    the point (an algorithm that is too slow must not finish, a right one must, with room to spare)."""
    limited = getattr(function, "call_with_time_limit", None)
    if limited is not None:
        return limited(seconds, *args, **kwargs)
    return function(*args, **kwargs)


@contextlib.contextmanager
def reported_as(bridge: str, method: str):
    """Within the block, an error of the student's code met through the notebook function ``bridge`` (a
    given function that calls a method of the student's class for the hidden tests, which exchange plain
    values only) is reported as ``method``'s: "Tokenizer.encode raised KeyError", not
    "tokenizer_results raised KeyError". (Outside the grader nothing is renamed.)

    The grader marks such an error with ``(function called, class)`` (``autograder/kernel.py``), from
    which ``verdicts.py`` writes "<function> raised <class>":

    >>> error = KeyError("x")
    >>> error.autograder_student = ("tokenizer_results", "KeyError")
    >>> try:
    ...     with reported_as("tokenizer_results", "Tokenizer.encode"):
    ...         raise error
    ... except KeyError as raised:
    ...     print(raised.autograder_student)
    ('Tokenizer.encode', 'KeyError')
    """
    try:
        yield
    except Exception as error:
        said = getattr(error, "autograder_student", None)
        if isinstance(said, tuple) and len(said) == 2 and said[0] == bridge:
            error.autograder_student = (method, said[1])
        raise


_ANSWERS: dict = {}


def random_word_counts(seed: int, distinct: int, letters: str, shortest: int, longest: int, largest_count: int) -> dict[str, int]:
    """``distinct`` random words of ``letters`` (``shortest`` to ``longest`` long), each with a random
    count from 1 to ``largest_count``; the same dict for the same seed, made once per process (a
    large hidden case is then not drawn again for every notebook). A copy is returned.

    >>> random_word_counts(7, 3, "ab", 1, 2, 9) == random_word_counts(7, 3, "ab", 1, 2, 9)
    True
    >>> len(random_word_counts(7, 3, "ab", 1, 2, 9))
    3
    """
    return dict(_random_word_counts(seed, distinct, letters, shortest, longest, largest_count))


@functools.lru_cache(maxsize=8)
def _random_word_counts(seed, distinct, letters, shortest, longest, largest_count) -> dict[str, int]:
    rng = random.Random(seed)
    counts: dict[str, int] = {}
    while len(counts) < distinct:  # a word drawn again gets a new count, as the hidden tests always did
        counts["".join(rng.choice(letters) for _ in range(rng.randint(shortest, longest)))] = rng.randint(1, largest_count)
    return counts


def reference_seconds(function, *args, **kwargs) -> float:
    """How long ``reference_answer(function, *args, **kwargs)`` took to compute, in this process (the
    reference's time for a timed hidden case, measured in the same grading run)."""
    reference_answer(function, *args, **kwargs)
    return _SECONDS[_key(function, args, kwargs)]


_SECONDS: dict = {}


def _key(function, args, kwargs):
    import pickle

    return (getattr(function, "__module__", None), getattr(function, "__qualname__", repr(function)),
            pickle.dumps((args, sorted(kwargs.items())), protocol=4))


def reference_answer(function, *args, **kwargs):
    """``function(*args, **kwargs)``, computed once per process for the same arguments (plain data):
    the reference answer to a large fixed hidden case is then not recomputed for every notebook a
    grading process grades. A copy is returned, so a check that changes it changes nothing else.

    >>> reference_answer(sorted, [3, 1, 2]) == [1, 2, 3] and reference_answer(sorted, [3, 1, 2]) is not reference_answer(sorted, [3, 1, 2])
    True
    """
    import copy

    key = _key(function, args, kwargs)
    if key not in _ANSWERS:
        started = time.perf_counter()
        _ANSWERS[key] = function(*args, **kwargs)
        _SECONDS[key] = time.perf_counter() - started
    return copy.deepcopy(_ANSWERS[key])

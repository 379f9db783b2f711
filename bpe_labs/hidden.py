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


def call_each(function, argument_lists: list, **keywords) -> list:
    """``[function(*args, **keywords) for args in argument_lists]``, for a ``for`` loop over the cases.

    Against a student's function in the grader this is one round trip to the kernel instead of one
    per input (about 7 ms each): use it for the many inputs of a part. Like the loop, each call has
    its own time limit, and the error of call k is raised when the loop reaches case k (the results
    are read lazily; the calls after it are not made).
    """
    batch = getattr(function, "call_each", None)
    if batch is not None:
        return batch([tuple(args) for args in argument_lists], **keywords)
    return [function(*args, **keywords) for args in argument_lists]


def stand_in_calls() -> int:
    """Calls of stand-in helpers the grader's reference answered so far (``autograder/stand_ins.py``;
    0 outside the grader). A timed hidden test allows for their round trips: the slowness is ours."""
    stand_ins = sys.modules.get("autograder.stand_ins")  # imported by the grader only
    return stand_ins.STAND_IN_CALLS[0] if stand_ins is not None else 0


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

    >>> error = KeyError("x")
    >>> error.autograder_student = "tokenizer_results raised KeyError: 'x'"
    >>> try:
    ...     with reported_as("tokenizer_results", "Tokenizer.encode"):
    ...         raise error
    ... except KeyError as raised:
    ...     print(raised.autograder_student)
    Tokenizer.encode raised KeyError: 'x'
    """
    try:
        yield
    except Exception as error:
        said = getattr(error, "autograder_student", None)
        if isinstance(said, str) and said.startswith(f"{bridge} raised "):
            error.autograder_student = method + said[len(bridge):]
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


def reference_answer(function, *args, **kwargs):
    """``function(*args, **kwargs)``, computed once per process for the same arguments (plain data):
    the reference answer to a large fixed hidden case is then not recomputed for every notebook a
    grading process grades. A copy is returned, so a check that changes it changes nothing else.

    >>> reference_answer(sorted, [3, 1, 2]) == [1, 2, 3] and reference_answer(sorted, [3, 1, 2]) is not reference_answer(sorted, [3, 1, 2])
    True
    """
    import copy
    import pickle

    key = (getattr(function, "__module__", None), getattr(function, "__qualname__", repr(function)),
           pickle.dumps((args, sorted(kwargs.items())), protocol=4))
    if key not in _ANSWERS:
        _ANSWERS[key] = function(*args, **kwargs)
    return copy.deepcopy(_ANSWERS[key])

"""Lab 7's speed rule for ``train_bpe``: one rule, applied the same way by a part's visible check
(in the student's kernel) and by its hidden test (in the grader), so that a moment of load between
the two cannot turn the check's ✅ into a 0; and each decides "too slow" within seconds.

The rule times the student's function against a **unit**, a fixed piece of work timed in the same
moment (:func:`times_the_unit`: best of up to three rounds, each timing the unit and then the
function), and allows a multiple of it. The limit sits between what a right algorithm takes and what
the slow one takes, with a margin of about two either way, more than any load moves a ratio of two
times measured together. The cases are small, so that the slow algorithm shows in a second or two:
"too slow" is known in seconds (a call that runs longer still is stopped at the usual limit of a
call).

The unit: one pass over the file (:func:`one_pass`: read it, cut it into GPT-2's pre-tokens, count
the byte pairs of every one). On a file of ``PRETOKENS`` pre-tokens made of ``WORDS`` distinct words
(:func:`speed_text`), ``MERGES`` merges may take ``TRAIN_MULTIPLE`` passes. Counting each distinct
pre-token once takes one or two (the course's reference trainer too); walking every pre-token at
every merge, one or two per merge: 50 to 100.

The visible check holds copies of these functions and numbers (a student's notebook has the standard
library and ``regex`` only); ``tests/test_speed_rule.py`` checks that the copies are this code.

    >>> text = speed_text(7)
    >>> len(text.split(" ")), len(set(text.split(" ")))
    (6000, 40)
    >>> times_the_unit(lambda: 0.5, lambda: time.sleep(0.001), 10) > 10
    True
"""
from __future__ import annotations

import random
import time

import regex

PRETOKENS, WORDS, MERGES, TRAIN_MULTIPLE = 6000, 40, 60, 10
ROUNDS = 3
CLEAR = 1.5  # past CLEAR times the limit, the answer is clear: no second round
# Greek: no word of a hidden case can be mistaken for the text of a message
LETTERS = "αβγδεζηθικλμνξ"


def speed_text(seed):
    """PRETOKENS pre-tokens made of WORDS distinct words of 3 to 7 letters, joined by spaces."""
    rng = random.Random(seed)
    words = set()
    while len(words) < WORDS:
        words.add("".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 7))))
    words = sorted(words)
    return " ".join(rng.choice(words) for _ in range(PRETOKENS))


def one_pass(path, pattern):
    """Lab 7's unit: one pass over the file, as recounting makes it at every merge: read it, cut
    it into GPT-2's pre-tokens, count the adjacent byte pairs of every pre-token."""
    with open(path, encoding="utf-8") as file:
        text = file.read()
    pairs = {}
    for pretoken in regex.findall(pattern, text):
        data = pretoken.encode("utf-8")
        for pair in zip(data, data[1:]):
            pairs[pair] = pairs.get(pair, 0) + 1
    return pairs


def times_the_unit(run, unit_now, limit):
    """How many times the unit's time ``run`` takes (``run()`` returns its own seconds): the best
    of up to ROUNDS rounds, each timing ``unit_now()`` and then ``run()``, so both are measured
    in the same moment of the machine; it stops once the answer is clear: within ``limit``, or
    over CLEAR times ``limit``."""
    best_run, best_unit = float("inf"), float("inf")
    unit_now()  # once untimed: a first call's start-up is not the unit's time
    for _ in range(ROUNDS):
        started = time.perf_counter()
        unit_now()
        best_unit = min(best_unit, time.perf_counter() - started)
        best_run = min(best_run, run())
        if best_run <= limit * best_unit or best_run > CLEAR * limit * best_unit:
            break
    return best_run / best_unit

"""The course's speed verdict: one measurement, applied the same way by a part's visible check (in
the student's kernel) and by its hidden test (in the grader), so that a moment of load between the
two cannot turn the check's ✅ into a 0; and "too slow" is known in seconds.

A timed part's rule (``speed_bpe_tokenizer.py``, ``speed_fast_bpe.py``: one module per lab) gives a
case, a **unit** (a fixed piece of work about as long as a right answer takes on that case) and a
limit, a multiple of the unit. :func:`times_the_unit` times the student's call and the unit in the
same moment: best of up to ``ROUNDS`` rounds, each timing the unit and then the call, stopping once
the answer is clear (within the limit, or over ``CLEAR`` times it). Each call is told the time past
which the answer is clear, and may be stopped there: a too-slow answer costs that time, not its own.
Every rule's limit sits between what a right answer takes and what the slow algorithm takes with a
margin of about two or more either way, more than any load moves a ratio of two times measured
together.

The visible checks hold copies of this function and the rules' (a student's notebook has the
standard library and ``regex`` only); ``tests/test_speed_rule.py`` checks that the copies are this
code.

    >>> times_the_unit(lambda within: 0.5, lambda: time.sleep(0.001), 10) > 10
    True
    >>> times_the_unit(lambda within: float("inf"), lambda: None, 10)
    inf
"""
from __future__ import annotations

import time

ROUNDS = 3
CLEAR = 1.5  # past CLEAR times the limit, the answer is clear: no second round, and a call may stop


def times_the_unit(run, unit_now, limit):
    """How many times the unit's time ``run`` takes: the best of up to ROUNDS rounds, each timing
    ``unit_now()`` and then ``run(within)``, so both are measured in the same moment of the
    machine; ``run`` returns its own seconds (``float("inf")`` when it stopped at ``within``, the
    time past which it is clearly too slow). It stops once the answer is clear: within ``limit``,
    or over CLEAR times ``limit``."""
    best_run, best_unit = float("inf"), float("inf")
    unit_now()  # once untimed: a first call's start-up is not the unit's time
    for _ in range(ROUNDS):
        started = time.perf_counter()
        unit_now()
        best_unit = min(best_unit, time.perf_counter() - started)
        best_run = min(best_run, run(CLEAR * limit * best_unit))
        if best_run <= limit * best_unit or best_run > CLEAR * limit * best_unit:
            break
    return best_run / best_unit

"""The course's speed verdict: one measurement, applied the same way by a part's visible check (in
the student's kernel) and by its hidden test (in the grader), so that a moment of load between the
two cannot turn the check's ✅ into a 0; and "too slow" is known in seconds.

A timed part's rule (``speed_bpe_tokenizer.py``, ``speed_fast_bpe.py``: one module per lab) gives a
case, a **unit** (a fixed piece of work about as long as a right answer takes on that case) and a
limit, a multiple of the unit. :func:`times_the_unit` times the student's call and the unit in the
same moment: best of up to ``ROUNDS`` rounds, each timing the unit and then the call, stopping once
the answer is clear (within the limit, or over ``CLEAR`` times it). Both are timed in **CPU
time**, the unit with ``time.thread_time`` and the call by what runs it (the check: its
``time.process_time``; the grader: the kernel's processes, read from /proc): a busy machine slows
every clock, the grader's and the kernel's each by its own share of the cores, but not the CPU
time a piece of work takes. Each call is told when to stop: ``CUT_ROOM`` times the CPU time past
which the answer is clear, on the clock (room for a busy machine), so a too-slow answer costs
seconds, not its own time.
Every rule's limit sits between what a right answer takes and what the slow algorithm takes with a
margin of about two or more either way, more than any load moves a ratio of two times measured
together.

The visible checks hold copies of this function and the rules' (a student's notebook has the
standard library and ``regex`` only); ``tests/test_speed_rule.py`` checks that the copies are this
code.

    >>> times_the_unit(lambda within: 0.5, lambda: sum(range(10**4)), 10) > 10
    True
    >>> times_the_unit(lambda within: float("inf"), lambda: None, 10)
    inf
"""
from __future__ import annotations

import time

ROUNDS = 3
CLEAR = 1.5  # past CLEAR times the limit, the answer is clear: no second round, and a call may stop
CUT_ROOM = 3  # a call is stopped on the clock at CUT_ROOM times that: a third of a core is enough


def times_the_unit(run, unit_now, limit):
    """How many times the unit's CPU time ``run`` takes: the best of up to ROUNDS rounds, each
    timing ``unit_now()`` and then ``run(within)``, so both are measured in the same moment of the
    machine; ``run`` returns its own CPU seconds (``float("inf")`` when it stopped at ``within``
    seconds on the clock, CUT_ROOM times the CPU time past which it is clearly too slow). It stops
    once the answer is clear: within ``limit``, or over CLEAR times ``limit``."""
    best_run, best_unit = float("inf"), float("inf")
    unit_now()  # once untimed: a first call's start-up is not the unit's time
    for _ in range(ROUNDS):
        started = time.thread_time()
        unit_now()
        best_unit = max(min(best_unit, time.thread_time() - started), 1e-6)
        best_run = min(best_run, run(CUT_ROOM * CLEAR * limit * best_unit))
        if best_run <= limit * best_unit or best_run > CLEAR * limit * best_unit:
            break
    return best_run / best_unit

"""One bug, one part: a part is graded with the reference versions of the earlier answers it may rely on
that failed their own parts.

While such a part is graded, each failing helper in the student's kernel is a *stand-in*
(``codec.stand_in``): a function that carries no reference code, only sends its arguments to the
grader over the kernel's stdin channel. The grader answers by running the reference here, in its
own process, and only while that part is being graded; afterwards the student's own helper is put
back. A stand-in kept by student code for later gets no answer, so it earns nothing elsewhere.
"""
from __future__ import annotations

import contextlib
import importlib
import signal
import threading

from autograder import codec, hidden
from autograder.kernel import KernelSession
from autograder.labs import Part, Upstream


def reference(path: str):
    """``"package.module:function"`` -> the function."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


class ReferenceTooSlow(TimeoutError):
    pass


def call_with_deadline(function, seconds: float, *args, **kwargs):
    """``function(*args, **kwargs)``, stopped with :class:`ReferenceTooSlow` after ``seconds``
    (a timer signal: in the main thread, where the grader answers stand-ins; elsewhere, in a Dask
    worker's thread, without a limit but the kernel call's own).

    >>> import time
    >>> try:
    ...     call_with_deadline(time.sleep, 0.05, 1)
    ... except TimeoutError as error:
    ...     print(error)
    the reference took longer than 0.05 s on these arguments
    """
    if threading.current_thread() is not threading.main_thread():
        return function(*args, **kwargs)

    def expire(*_):
        raise ReferenceTooSlow(f"the reference took longer than {seconds:g} s on these arguments")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return function(*args, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def failing_upstream(session: KernelSession, part: Part) -> list[Upstream]:
    """The helpers of ``part`` whose own part was graded in this session and did not pass."""
    return [u for u in part.upstream if session.part_passed.get(u.part_id) is False]


@contextlib.contextmanager
def standing_in(session: KernelSession, helpers: list[Upstream]):
    """Stand-ins for ``helpers`` in the kernel for the duration of the block; yields the set of the
    names the student's code actually called."""
    used: set[str] = set()
    if not helpers:
        yield used
        return
    references = {}
    for helper in helpers:
        run = reference(helper.reference)

        def counted(*args, _run=run, _name=helper.name, **kwargs):
            used.add(_name)
            hidden.STAND_IN_CALLS[0] += 1
            # The student chooses these arguments and the grader pays for the answer: one call's
            # time at most, as for the student's own functions.
            return call_with_deadline(_run, session.limits.call_seconds, *args, **kwargs)

        references[helper.name] = counted
    session.stdin_answer = lambda prompt: codec.answer_stand_in(prompt, references)
    placed = []
    try:
        for helper in helpers:
            session.stand_in(helper.name)
            placed.append(helper.name)
        yield used
    finally:
        session.stdin_answer = None
        for name in placed:
            try:
                session.put_back(name)
            except Exception:  # a dead kernel was restarted with the notebook's own functions
                pass


def note(part: Part, helpers: list[Upstream], used: set[str]) -> str:
    """``learn_bpe was graded with a reference merge_pair_in_word, because yours fails``."""
    names = [h.name for h in helpers if h.name in used]
    if not names:
        return ""
    tested = " and ".join(part.functions) or "this part"
    helpers_text = ", ".join(f"a reference {name}" for name in names)
    owners = sorted({h.part_id for h in helpers if h.name in used})
    yours = "yours fails" if len(names) == 1 else "yours fail"
    were = "were" if len(part.functions) > 1 else "was"
    return f"{tested} {were} graded with {helpers_text}, because {yours} (part {', '.join(owners)})"

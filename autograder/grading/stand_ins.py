"""One bug, one part: a part is graded with the reference versions of the earlier answers it may
rely on that failed their own parts.

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
import time

from autograder.kernel import codec, shapes
from autograder.course_interface import STAND_INS
from autograder.kernel.session import KernelSession
from autograder.labs import Part, Upstream

# (arrived, answered) on the grader's clock, for each stand-in call of this process: a timed call's
# stand-in round trips are read from it (``check.StudentFunction.timed_call``).
STAND_IN_LOG = STAND_INS.answers


def reference(path: str):
    """``"package.module:function"`` -> the function."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


class ReferenceTooSlow(TimeoutError):
    pass


def call_with_deadline(function, seconds: float, *args, **kwargs):
    """``function(*args, **kwargs)``, stopped with :class:`ReferenceTooSlow` after ``seconds``:
    by a timer signal in the main thread (where the CLI's workers and Gradescope answer stand-ins);
    elsewhere (a Dask worker's thread, where no signal can be set) in a forked child that is
    killed when the time is up.

    >>> import time
    >>> try:
    ...     call_with_deadline(time.sleep, 0.05, 1)
    ... except TimeoutError as error:
    ...     print(error)
    the reference took longer than 0.05 s on these arguments
    >>> import concurrent.futures
    >>> with concurrent.futures.ThreadPoolExecutor() as pool:  # as a Dask worker runs a task
    ...     slow = pool.submit(call_with_deadline, time.sleep, 0.05, 5)
    ...     fast = pool.submit(call_with_deadline, sorted, 5, "bca")
    ...     print(type(slow.exception()).__name__, fast.result())
    ReferenceTooSlow ['a', 'b', 'c']
    """
    if threading.current_thread() is not threading.main_thread():
        return _in_child(function, seconds, args, kwargs)

    def expire(*_):
        raise ReferenceTooSlow(f"the reference took longer than {seconds:g} s on these arguments")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return function(*args, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _in_child(function, seconds: float, args: tuple, kwargs: dict):
    """The call in a forked child, its outcome back through a pipe; the child is killed at the
    deadline. Only the reference runs there (plain Python on plain values), so the locks that
    other threads may hold at fork time are never needed."""
    import os
    import pickle
    import select
    import time

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            try:
                outcome = ("returned", function(*args, **kwargs))
            except Exception as error:
                outcome = ("raised", error)
            data = pickle.dumps(outcome)
        except BaseException as error:
            data = pickle.dumps(
                ("raised", RuntimeError(f"the reference failed: {type(error).__name__}"))
            )
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data)
        os._exit(0)
    os.close(write_end)
    chunks, deadline = [], time.monotonic() + seconds
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                raise ReferenceTooSlow(
                    f"the reference took longer than {seconds:g} s on these arguments"
                )
            chunk = os.read(read_end, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "raised":
        raise value
    return value


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
            # The student chooses these arguments and the grader pays for the answer: one call's
            # time at most, as for the student's own functions. The answer has the shape the
            # student's own function gave its results, where the task allows several
            # (kernel/shapes.py).
            answer = call_with_deadline(_run, session.limits.call_seconds, *args, **kwargs)
            return shapes.conform(answer, session.shapes.get(_name))

        references[helper.name] = counted

    def answer(prompt: str) -> str:
        started = time.perf_counter()
        try:
            return codec.answer_stand_in(prompt, references)
        finally:
            STAND_INS.record(started, time.perf_counter())

    placed = []
    try:
        with session.answering_stdin(answer):  # stdin is off again before the helpers are put back
            for helper in helpers:
                session.stand_in(helper.name)
                placed.append(helper.name)
            yield used
    finally:
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

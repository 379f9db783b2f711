"""Slow imports and bookkeeping in a process of their own, while the notebooks grade.

Grading one notebook takes a few seconds; importing nbgrader (SQLAlchemy, alembic) to write the
gradebook, or matplotlib to draw the class report, takes about as long. A ``Background``
process is forked before grading starts: it imports what it will need at once, then runs the
calls it is sent, one at a time, in order. By the time the first result comes back it is
ready, and the command does not wait for those imports.

    helper = Background("gradebook", preload=["nbgrader.api"])
    helper.submit(prepare, db_path, lab_ids)  # returns at once
    helper.result()  # prepare's return value, or its exception raised here
    helper.close()

Functions travel by reference (module and name), arguments by pickle. If the process cannot
be forked (no fork on this system, or threads running here), dies, or does not answer within
``timeout`` seconds, ``result`` raises ``BackgroundLost``: the caller does the work itself.
"""
from __future__ import annotations

import importlib
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import weakref
from typing import Callable


class BackgroundLost(RuntimeError):
    """The background process is not there (no fork on this system), died or hangs."""


def _sendable(error: BaseException) -> BaseException:
    """``error`` if it survives pickling, else a RuntimeError saying what it was."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {str(error)[:300]}")


def _load(preload: tuple, niceness: int = 0) -> None:
    """Import ``preload`` (or call its functions), at ``niceness`` if given (Linux: this thread
    only)."""
    if niceness:
        try:
            # a thread's own priority on Linux
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
        except OSError:
            pass
    for step in preload:
        try:
            step() if callable(step) else importlib.import_module(step)
        except Exception:  # only a head start: the call that needs it will say what is wrong
            pass


def _serve(connection, preload: tuple, parent: int, niceness: int = 0) -> None:
    """The background process: import ``preload``, then run each call sent, answering (ok, value).

    With ``niceness``, the imports run in a thread of lower priority: they take the CPU the grading
    leaves, yet the calls (the class report at the end, when the command waits for it) run at full
    priority; a call waits for the imports to finish first."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    loader = None
    if niceness and sys.platform == "linux":
        loader = threading.Thread(
            target=_load, args=(preload, niceness), name="preload", daemon=True
        )
        loader.start()
    else:
        _load(preload)
    while True:
        try:
            while not connection.poll(1.0):
                if os.getppid() != parent:  # the parent is gone (killed): nobody will ask again
                    return
            call = connection.recv()
        except (EOFError, OSError):
            return
        if call is None:
            return
        function, args = call
        if loader is not None:
            loader.join()
            loader = None
        try:
            answer = (True, function(*args))
        except BaseException as error:  # the caller decides what it means
            answer = (False, _sendable(error))
        try:
            connection.send(answer)
        except Exception as error:  # an unpicklable return value
            connection.send(
                (False, RuntimeError(f"the answer could not be sent back ({type(error).__name__})"))
            )


def _end(process, connection) -> None:
    """Kill the process and close the pipe (also when its ``Background`` is dropped unclosed)."""
    process.kill()
    process.join()
    connection.close()


class Background:
    """A forked process that imports ``preload`` at once and runs the calls it is sent, in order.

    ``preload`` holds module names, or functions to call there first (set-up for those imports);
    ``niceness`` lowers the priority of those imports (not of the calls): for a helper whose
    imports may take their time but whose calls someone waits for.
    """

    def __init__(
        self, name: str, preload: list | tuple = (), timeout: float = 300, niceness: int = 0
    ):
        self.timeout, self.pending = timeout, 0
        self.process = self.connection = None
        if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
            # A fork copies only this thread: a lock another thread holds (an import under way,
            # say) would stay held in the child forever. The caller then does the work itself.
            return
        # fork: the child has this process's modules (the labs, the settings) already
        context = multiprocessing.get_context("fork")
        self.connection, child = context.Pipe()
        self.process = context.Process(
            target=_serve,
            args=(child, tuple(preload), os.getpid(), niceness),
            name=name,
            daemon=True,
        )
        self.process.start()
        child.close()
        # A batch that stops with an exception drops its helpers unclosed: end their processes then.
        self._finalizer = weakref.finalize(self, _end, self.process, self.connection)

    @property
    def alive(self) -> bool:
        return self.process is not None

    def submit(self, function: Callable, *args) -> None:
        """Send a call; ``result()`` gives its answer. ``function`` must be importable by name."""
        if self.process is None or self.connection is None:
            raise BackgroundLost("no background process")
        try:
            self.connection.send((function, args))
        except (OSError, ValueError) as error:
            self.stop()
            raise BackgroundLost(
                f"the background process is gone ({type(error).__name__})"
            ) from None
        self.pending += 1

    def result(self):
        """The answer to the oldest call not yet collected: its return value, or its exception
        raised."""
        if self.process is None or self.connection is None or not self.pending:
            raise BackgroundLost("no call is waiting for an answer")
        try:
            if not self.connection.poll(self.timeout):
                raise TimeoutError
            ok, value = self.connection.recv()
        except (OSError, EOFError, TimeoutError) as error:
            self.stop()
            raise BackgroundLost(
                f"the background process died or hangs ({type(error).__name__})"
            ) from None
        self.pending -= 1
        if not ok:
            raise value
        return value

    def call(self, function: Callable, *args):
        self.submit(function, *args)
        return self.result()

    def stop(self) -> None:
        """End the process now."""
        if self.process is not None:
            self._finalizer()
            self.process = self.connection = None

    def close(self) -> None:
        """Let the process finish the calls it was sent, then end it."""
        if self.process is None or self.connection is None:
            return
        try:
            self.connection.send(None)
            self.process.join(self.timeout)
        except OSError:
            pass
        self.stop()

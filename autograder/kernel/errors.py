"""What can go wrong when the grader talks to a student's kernel (every kernel module raises
these)."""

from __future__ import annotations

from autograder.strenum import StrEnum


class CellStatus(StrEnum):
    """How a cell ran (``process.CellRun``): ok, or what went wrong. A result's ``cells`` and the
    feedback write its value."""

    OK = "ok"
    ERROR = "error"  # it raised
    TIMEOUT = "timeout"  # stopped at its time limit (or it calls a function already out of time)
    DIED = "died"  # the kernel died while running it
    SKIPPED = "skipped"  # not run: the notebook's time was used up


class KernelDied(Exception):
    """The kernel died (memory cap, os._exit, a crash) or stopped answering."""


class CallTimeout(Exception):
    """A call into the student's code did not finish in time."""


class StudentRaised(Exception):
    """The student's function raised an exception that is not a built-in class."""


class IsolationUnavailable(RuntimeError):
    """``require_isolation`` was asked for where the boundary cannot be built."""


TIME_USED_UP = "could not run: the notebook's time limit was used up"

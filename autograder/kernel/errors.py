"""What can go wrong when the grader talks to a student's kernel (every kernel module raises
these)."""

from __future__ import annotations


class KernelDied(Exception):
    """The kernel died (memory cap, os._exit, a crash) or stopped answering."""


class CallTimeout(Exception):
    """A call into the student's code did not finish in time."""


class StudentRaised(Exception):
    """The student's function raised an exception that is not a built-in class."""


class IsolationUnavailable(RuntimeError):
    """``require_isolation`` was asked for where the boundary cannot be built."""


TIME_USED_UP = "could not run: the notebook's time limit was used up"

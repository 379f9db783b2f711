"""A student's notebook running in a fresh, limited Jupyter kernel that the grader can call into.

One :class:`KernelSession` per submission puts together three objects with one job each: the
sandbox's folders (``workspace.py``), the kernel's life with its restarts and replays
(``process.py``) and the calls into the notebook (``calls.py``). What a machine's
kernels may read and which isolation they get is ``boundary.py``; how they start fast,
``zygote.py``.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

from autograder.course_interface import OWN_CLASS
from autograder.kernel.boundary import CoursePaths, boundary_mode, refused
from autograder.kernel.probe import isolation_status
from autograder.kernel.errors import (
    TIME_USED_UP,
    CallTimeout,
    CellStatus,
    IsolationUnavailable,
    KernelDied,
    StudentRaised,
)
from autograder.kernel.process import CellRun, Clock, Kernel
from autograder.kernel.limits import Limits
from autograder.kernel.calls import CallResults, NotebookCalls
from autograder.kernel.workspace import Workspace
from autograder.kernel.zygote import ZYGOTE, imported_modules

__all__ = [
    "KernelSession",
    "Limits",
    "CellRun",
    "CellStatus",
    "CallResults",
    "CallTimeout",
    "KernelDied",
    "StudentRaised",
    "IsolationUnavailable",
    "isolation_status",
    "imported_modules",
    "ZYGOTE",
    "OWN_EXCEPTION",
]
OWN_EXCEPTION = OWN_CLASS  # how a hidden test's feedback names a class the student made


class KernelSession:
    """A notebook's kernel for one file, as a context manager: started on entry, shut down on exit.

    ``preload``: modules the released notebook imports (see zygote.py); ``status``: the isolation to
    give the kernel (default: isolation_status()); ``use_zygote=False``: started the usual way (the
    probe); ``course``: its paths (default: the course being graded); ``clock``: the file's clock,
    shared by all its kernels (default: a new one)."""

    def __init__(self, workdir: Path, limits: Limits | None = None, data_dir: Path | None = None,
                 denied: tuple[Path, ...] = (), preload: tuple[str, ...] = (),
                 status: str | None = None, use_zygote: bool = True,
                 course: CoursePaths | None = None, clock: Clock | None = None):
        limits = limits or Limits()
        self.clock = clock or Clock(limits.notebook_seconds)
        self.status, self.isolation = status, ""
        paths = course or CoursePaths.of()
        self.workspace = Workspace(Path(workdir), "", limits, paths, data_dir, denied)
        self.kernel = Kernel(self.workspace, limits, self.clock, preload, use_zygote)
        self.calls = calls = NotebookCalls(self.kernel, limits, self.clock)
        # The notebook calls a grader makes besides a student's functions (calls.py).
        self.describe, self.fetch, self.snapshot = calls.describe, calls.fetch, calls.snapshot
        self.changed_since, self.stand_in = calls.changed_since, calls.stand_in
        self.put_back = calls.put_back
        # part id -> full points, for the parts graded so far (grading/check.py)
        self.part_passed: dict[str, bool] = {}

    def __enter__(self) -> "KernelSession":
        if self.seconds_left <= 0:  # no kernel started only to be told so
            raise CallTimeout(TIME_USED_UP)
        self.isolation = self.workspace.isolation = self.status or isolation_status()
        if self.limits.require_isolation and not boundary_mode(self.isolation):
            raise IsolationUnavailable(
                f"kernel isolation was required but is not available here: {self.isolation}")
        if refused(self.isolation):  # never a student's code as root
            raise IsolationUnavailable(
                f"no kernel was started: {self.isolation}: give this machine the boundary "
                "(Linux with Landlock), or a Python that other users can run")
        self.workspace.create()
        try:
            self.kernel.start()
        except BaseException:  # started, then failed (its codec, the notebook's time): shut it too
            self._shut_down(self.kernel, self.workspace)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        # Shutting a kernel down is mostly waiting for it to exit: let a thread do it while the
        # worker goes on to the next notebook. Not a daemon, so that no kernel outlives the
        # process (interpreter exit, and multiprocessing's workers, join such threads).
        threading.Thread(target=self._shut_down, args=(self.kernel, self.workspace),
                         daemon=False).start()

    @staticmethod
    def _shut_down(kernel: Kernel, workspace: Workspace) -> None:
        kernel.shut_down()
        workspace.remove()

    @property
    def limits(self) -> Limits:
        """The limits now (a call's time is longer within :meth:`limits_for`)."""
        return self.calls.limits

    @property
    def seconds_left(self) -> float:
        return self.clock.seconds_left

    @property
    def restarts(self) -> int:
        return self.kernel.restarts

    def kernel_cpu_seconds(self) -> float | None:
        """The CPU time the kernel's processes have used so far (see ``Kernel.cpu_seconds``)."""
        return self.kernel.cpu_seconds()

    @property
    def sent_arguments(self) -> list:
        return self.calls.sent_arguments

    @property
    def shapes(self) -> dict[str, Any]:
        return self.calls.shapes

    @contextlib.contextmanager
    def limits_for(self, call_seconds: float, at_least_usual: bool = True) -> Iterator[None]:
        """Within the block, a call may run ``call_seconds`` (at least the usual time, unless
        ``at_least_usual`` is false)."""
        with self.calls.limits_for(call_seconds, at_least_usual):
            yield

    def answering_stdin(self, answer: Callable[[str], str]
                        ) -> contextlib.AbstractContextManager[None]:
        """Within the block, the kernel's input requests are answered by ``answer`` (stand-ins)."""
        return self.kernel.answering_stdin(answer)

    def run_cell(self, code: str, replay: bool = True, capture: bool = False) -> CellRun:
        """Run a cell; one that calls a function already out of time is not run (the same verdict,
        at once), and a cell stopped at its limit marks the functions it was running."""
        refused = self.calls.hung_in(code)
        if refused:
            return CellRun(CellStatus.TIMEOUT, refused)
        self.calls.ran(code)
        run = self.kernel.run_cell(code, replay, capture)
        if run.status == CellStatus.TIMEOUT and run.error.startswith("stopped after"):
            self.calls.note_stopped(
                f"did not finish within {self.kernel.limits.cell_seconds:g} s", code
            )
        return run

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.calls.call(name, *args, **kwargs)

    def call_each(self, name: str, argument_lists: list, within: float | None = None,
                  keywords: dict | None = None, with_arguments: bool = False) -> CallResults:
        return self.calls.call_each(name, argument_lists, within, keywords, with_arguments)

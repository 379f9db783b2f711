"""The grader's limits and their defaults, in one place.

:class:`Limits` (what one student's kernel may use) and the few settings beside it (a part's time,
a grading process's memory, how many notebooks grade at once) are declared here once; the command
line (``grade``, ``serve``, ``gradescope``: :func:`add_limit_arguments`), Gradescope's runner, the
service's settings and the docs read them from here (``tests/test_limits_one_source.py`` checks the
help, the settings and docs/GRADING.md against :class:`Limits`). Nothing here imports the kernel's
libraries: the command line reads it before it knows what it will run.

    >>> Limits().cell_seconds, Limits().call_seconds, Limits().notebook_seconds, PART_SECONDS
    (60.0, 10.0, 600.0, 60.0)
    >>> limits_from(argparse.Namespace(cell_timeout=5.0, memory_mb=1024.0)).memory_bytes == 1024**3
    True
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

MiB = 1024 * 1024

# The hidden tests of one part, all of them together (``grade --part-timeout``).
PART_SECONDS = 60.0
# Address-space cap of each local grading process (``--grader-memory-mb``; 0: none; see
# batch/workers.py).
GRADER_MEMORY_BYTES = 6 * 1024**3


def default_workers() -> int:
    """Notebooks graded at once on this machine: twice the cores (about a quarter of grading is
    waiting)."""
    return 2 * (os.cpu_count() or 1)


@dataclass(frozen=True)
class Limits:
    """Grading limits of one student's kernel; every one can be set from the command line."""

    cell_seconds: float = 60.0
    call_seconds: float = 10.0
    notebook_seconds: float = 600.0
    memory_bytes: int = 4096 * MiB
    interrupt_grace_seconds: float = 5.0
    # Reading what a cell printed takes at most this long: a kernel may publish without end.
    drain_seconds: float = 2.0
    # A notebook that kills every kernel would otherwise be replayed without end.
    max_restarts: int = 3
    # A kernel's message larger than this is dropped unread (ZMQ_MAXMSGSIZE) before the grader
    # decodes it: a 200 MB reply grew the grader by 1.3 GB. The call then fails like a dead kernel.
    reply_bytes: int = 32 * MiB
    # The boundary's other limits (boundary mode only: they need the kernel in its own namespaces).
    disk_bytes: int = 512 * MiB  # the work folder is a tmpfs of this size
    file_bytes: int = 256 * MiB
    processes: int = 256  # per kernel uid: threads count too
    open_files: int = 1024
    cpu_seconds: int = 1800
    require_isolation: bool = False  # refuse to grade rather than fall back to the fence

    def rlimits(self) -> dict[str, int]:
        """The resource limits the launcher sets in the kernel (``resource.setrlimit`` names)."""
        limits = {
            "RLIMIT_AS": self.memory_bytes,
            "RLIMIT_FSIZE": self.file_bytes,
            "RLIMIT_NOFILE": self.open_files,
            "RLIMIT_CPU": self.cpu_seconds,
            "RLIMIT_CORE": 0,
        }
        if os.geteuid() == 0:  # RLIMIT_NPROC counts every process of the uid: only a uid of its own
            limits["RLIMIT_NPROC"] = self.processes
        return {name: value for name, value in limits.items() if value > 0 or name == "RLIMIT_CORE"}


def _number(value: float) -> str:
    """``60.0 -> '60'``: a default as the docs write it."""
    return f"{value:g}"


def add_limit_arguments(parser: argparse.ArgumentParser, gradescope: bool = False) -> None:
    """The limit options of ``grade`` and ``serve`` (with ``gradescope``: the five a Gradescope zip
    carries, with what to keep them below), their defaults from :class:`Limits`."""
    limits = Limits()
    parser.add_argument(
        "--cell-timeout",
        type=float,
        default=limits.cell_seconds,
        help=f"seconds one cell may run (default {_number(limits.cell_seconds)})",
    )
    parser.add_argument(
        "--call-timeout",
        type=float,
        default=limits.call_seconds,
        help="seconds one call of a student function may run "
        f"(default {_number(limits.call_seconds)})",
    )
    parser.add_argument(
        "--part-timeout",
        type=float,
        default=PART_SECONDS,
        help=f"seconds the hidden tests of one part may run (default {_number(PART_SECONDS)})",
    )
    below = "; keep it below Gradescope's own timeout" if gradescope else ""
    parser.add_argument(
        "--notebook-timeout",
        type=float,
        default=limits.notebook_seconds,
        help="seconds everything done for one file may take: cells, hidden tests, restarts and "
        f"replays (default {_number(limits.notebook_seconds)}{below})",
    )
    below = "; keep it below the container's memory" if gradescope else ""
    parser.add_argument(
        "--memory-mb",
        type=float,
        default=limits.memory_bytes / MiB,
        help="memory cap of a student's kernel in MiB "
        f"(default {_number(limits.memory_bytes / MiB)}{below})",
    )
    if gradescope:
        return
    parser.add_argument(
        "--max-restarts",
        type=int,
        default=limits.max_restarts,
        help=f"kernel restarts allowed per notebook after a crash (default {limits.max_restarts}); "
        "all within --notebook-timeout",
    )
    parser.add_argument(
        "--grader-memory-mb",
        type=float,
        default=GRADER_MEMORY_BYTES / MiB,
        help="address-space cap of each local grading process in MiB "
        f"(default {_number(GRADER_MEMORY_BYTES / MiB)}; 0: none)",
    )
    parser.add_argument(
        "--require-isolation",
        action="store_true",
        help="refuse to grade unless every kernel runs behind the Landlock boundary (never fall "
        "back to the weaker fence; see docs/SECURITY.md)",
    )
    parser.add_argument(
        "--one-kernel",
        action="store_true",
        help="grade each part at its test cell's place in the notebook's one kernel, never in a "
        "second kernel; the feedback then shows the notebook's own output only up to its "
        "first hidden test (by default the feedback shows all of it; see docs/GRADING.md)",
    )


def limits_from(args: argparse.Namespace) -> Limits:
    """The :class:`Limits` that :func:`add_limit_arguments`'s options say (an option absent: its
    default)."""
    usual = Limits()
    return Limits(
        cell_seconds=getattr(args, "cell_timeout", usual.cell_seconds),
        call_seconds=getattr(args, "call_timeout", usual.call_seconds),
        notebook_seconds=getattr(args, "notebook_timeout", usual.notebook_seconds),
        memory_bytes=int(getattr(args, "memory_mb", usual.memory_bytes / MiB) * MiB),
        max_restarts=getattr(args, "max_restarts", usual.max_restarts),
        require_isolation=getattr(args, "require_isolation", usual.require_isolation),
    )

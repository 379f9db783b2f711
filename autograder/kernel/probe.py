"""Which isolation a kernel started by this process gets (:func:`isolation_status`), probed once
per process with a real kernel asked what its launcher applied.

Above the kernel's parts (``process``, ``workspace``, ``calls``, ``boundary``), from which it
builds its probe kernel, and below ``session`` (whose sessions ask it for their default status).
"""
from __future__ import annotations

import functools
import os
import platform
import stat
import sys
import sysconfig
from pathlib import Path
from autograder.kernel import isolation, tempdirs
from autograder.kernel.limits import Limits
from autograder.kernel.calls import NotebookCalls
from autograder.kernel.process import Clock, Kernel
from autograder.kernel.workspace import Workspace
from autograder.kernel.boundary import CoursePaths, REFUSED, boundary_mode, import_folders
from autograder.kernel.isolation import IsolationMode, Piece, status_pieces


@functools.lru_cache(maxsize=None)
def isolation_status() -> str:
    """What isolation a kernel started by this process gets, in words for grades.csv.

    Probed once per process by starting a real kernel (not through the zygote) and asking it, before
    any student code runs in it, what its launcher applied:
    ``"landlock-abi7+seccomp+netns+pidns+uid+cgroup"``
    when the boundary holds here (a piece that could not be had is named:
    ``"landlock-abi7+netns+pidns+uid
    (no seccomp: ...)"``); else the fence as its probe kernel reports it (:func:`_fence`):
    ``"fence+seccomp+uid (...why...)"``, or ``"fence (...; refused: ...)"``. A kernel that dies at
    start says why (its last lines of output). ``AUTOGRADER_ISOLATION=fence`` forces the fence
    (tests).
    """
    if os.environ.get("AUTOGRADER_ISOLATION") == IsolationMode.FENCE:
        return _fence("AUTOGRADER_ISOLATION=fence")
    if not sys.platform.startswith("linux"):
        return _fence(f"no Landlock on {sys.platform}")
    abi = isolation.landlock_abi()
    if abi < 1:
        if isolation.syscall_table() is None:
            return _fence(f"no system call table for {platform.machine()}")
        return _fence("this Linux kernel has no Landlock")
    try:
        applied = _probe(isolation.landlock_piece(abi))
    except (
        Exception
    ) as failed:  # KernelDied, CallTimeout, OSError, zmq's errors (a socket path too long)...
        return _fence(
            "the boundary could not be built: "
            + _one_line(f"{type(failed).__name__}: {str(failed).split(' (before that: ')[0]}")
        )
    if not boundary_mode(applied):
        return _fence(f"the boundary could not be built: the probe kernel said {applied!r}")
    cgroups = isolation.create_kernel_cgroups(f"bpe-probe-{os.getpid()}", 1 << 30, 64)
    isolation.remove_cgroups(cgroups)
    pieces, _, missing = applied.partition(" ")
    return pieces + (f"+{Piece.CGROUP}" if cgroups else "") + (f" {missing}" if missing else "")


def _one_line(text: str, limit: int = 300) -> str:
    return " ".join(text.split())[-limit:]


def _fence(why: str) -> str:
    """The fence as a probe kernel reports it (``fence+seccomp+uid``: network closed, a uid of its
    own), and why there is no boundary. As root, a kernel that could not run under a uid of its own
    (this Python lies in a folder closed to other users, such as root's home) is refused: the
    status then says ``refused`` and no notebook is graded (:func:`refused`)."""
    if os.geteuid() == 0:
        closed = _closed_to_others(
            [Path(sys.executable).resolve(), Path(sysconfig.get_paths()["stdlib"]),
             *import_folders()]
        )
        if closed:
            return (f"fence ({why}; {REFUSED}: a kernel here would run as root, as {closed} is "
                    "closed to other users)")
    try:
        applied = _probe(f"{Piece.FENCE}+{Piece.UID}" if os.geteuid() == 0 else Piece.FENCE)
    except Exception as failed:
        detail = _one_line(f"{type(failed).__name__}: {failed}", 200)
        return f"fence ({why}; {REFUSED}: the fence's probe kernel failed: {detail})"
    if status_pieces(applied)[0] != Piece.FENCE:
        return f"fence ({why}; {REFUSED}: the probe kernel said {applied!r})"
    return f"{applied} ({why})"


def _closed_to_others(paths: list[Path]) -> Path | None:
    """The first of ``paths`` (or a folder above one) that a user other than its owner cannot
    read or pass through: then a kernel under a uid of its own could not run this Python."""
    for path in paths:
        for folder in reversed(path.parents):
            if folder.exists() and not folder.stat().st_mode & stat.S_IXOTH:
                return folder
        needed = stat.S_IROTH | (stat.S_IXOTH if path.is_dir() else 0)
        if path.exists() and path.stat().st_mode & needed != needed:
            return path
    return None


def _probe(status: str) -> str:
    """Start a real kernel as ``status`` says (never through the zygote) and ask it what it got: a
    kernel like any other, made of the parts a ``session.KernelSession`` is made of (a session asks
    this module for its default status, so it cannot be used here)."""
    limits = Limits(cell_seconds=60, call_seconds=60, notebook_seconds=90)
    clock = Clock(limits.notebook_seconds)
    with tempdirs.folder("probe") as folder:
        folder.chmod(0o711)
        workspace = Workspace(folder / "work", status, limits, CoursePaths.of())
        kernel = Kernel(workspace, limits, clock, (), False)
        workspace.create()
        try:
            kernel.start()
            return NotebookCalls(kernel, limits, clock).evaluate(
                f"__import__('os').environ.get({APPLIED!r}, '')", timeout=60
            )
        finally:
            kernel.shut_down()
            workspace.remove()


APPLIED = "AUTOGRADER_ISOLATION_APPLIED"  # set by sandbox_launcher in the kernel: what it applied

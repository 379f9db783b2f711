"""Temporary folders of the grader, its zygotes and kernels: named after the process that owns them,
removed when it is done, and swept by a later run once that process is gone.

Every folder is ``bpe-<kind>-<pid>.<start>-<random>`` in the temporary folder (``$TMPDIR``), where
``<pid>.<start>`` names the process that made it (its start time tells a reused pid apart). A
process removes its own folders when it is done with them; a grading process that is killed
cannot, so :func:`sweep` (run by every batch, and after a grading process is killed) removes the
folders whose owner is no longer running.

    >>> name = folder_name("kernel", 4242, 179567594040)
    >>> name
    'bpe-kernel-4242.2ahpwqbc-'
    >>> owner_of(name + "x1y2")
    (4242, 179567594040)
    >>> owner_of("bpe-zygote-abc") is None
    True
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

PREFIX = "bpe-"
_OWNED = re.compile(r"^bpe-[a-z]+-(\d+)\.([0-9a-z]+)-")


def _start_of(pid: int) -> int | None:
    """The start time of process ``pid`` in hundredths of a second since the epoch; None if there is
    none."""
    import psutil

    try:
        return round(psutil.Process(pid).create_time() * 100)
    except (psutil.Error, OSError):
        return None


def folder_name(kind: str, pid: int, start: int) -> str:
    """The start of the name of a folder of process ``pid`` (its start time in base 36: kernels'
    socket paths, beneath it, must stay within the 107 bytes of a Unix socket's address)."""
    return f"{PREFIX}{kind}-{pid}.{_base36(start)}-"


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[digit] + digits
        if not number:
            return digits


def owner_of(name: str) -> tuple[int, int] | None:
    """(pid, start time) of the process that made the folder ``name``; None for a name of another
    form."""
    found = _OWNED.match(name)
    return (int(found.group(1)), int(found.group(2), 36)) if found else None


_own: tuple[int, int] | None = None


def _owner() -> tuple[int, int]:
    global _own
    if _own is None or _own[0] != os.getpid():  # a forked child owns what it makes itself
        _own = (os.getpid(), _start_of(os.getpid()) or 0)
    return _own


def make(kind: str) -> Path:
    """A new private folder (mode 0700) owned by this process: ``bpe-<kind>-<pid>.<start>-...``."""
    return Path(tempfile.mkdtemp(prefix=folder_name(kind, *_owner())))


@contextlib.contextmanager
def folder(kind: str) -> Iterator[Path]:
    """A folder of :func:`make`, removed when the block ends, however it ends."""
    path = make(kind)
    try:
        yield path
    finally:
        remove(path)


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def alive(pid: int, start: int) -> bool:
    """Is the process that made a folder still running (the same process, not a reused pid)?"""
    now = _start_of(pid)
    return now is not None and abs(now - start) <= 1


def sweep(where: Path | None = None) -> list[Path]:
    """Remove every ``bpe-*`` folder in ``where`` (the temporary folder) whose owner is gone; the
    folders removed. Folders of live processes, and names of another form, are left alone."""
    where = Path(where or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(os.scandir(where))
    except OSError:
        return removed
    for entry in entries:
        owner = owner_of(entry.name)
        if owner is None or alive(*owner):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                remove(Path(entry.path))
            else:
                os.unlink(entry.path)
        except OSError:
            continue
        if not os.path.lexists(entry.path):
            removed.append(Path(entry.path))
    return removed


def sweep_cgroups() -> None:
    """Remove empty kernel cgroups (named like the kernels' folders) whose owner is gone."""
    from autograder.kernel import isolation

    for folder in isolation.kernel_cgroup_folders():
        owner = owner_of(os.path.basename(folder))
        if owner is not None and not alive(*owner):
            isolation.remove_cgroups([folder], wait_seconds=0)

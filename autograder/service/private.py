"""Owner-only files: the service's database (and SQLite's ``-wal`` and ``-shm``), tokens and LTI
keys hold every submission, score and password hash, so no other user of the machine may read
them.

Every service command starts with :func:`owner_only`: a umask of 077, so whatever it creates (SQLite
makes its files itself, with the process's umask) is 0600, and its folders 0700. A database made
by an older version, with wider modes, is narrowed when the service opens it (:func:`narrow`).
"""
from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("autograder.service")
OWNER_ONLY = 0o077
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def owner_only() -> int:
    """Files and folders this process creates from now on are its owner's only; returns the old
    umask."""
    return os.umask(OWNER_ONLY)


def private_folder(folder: Path) -> None:
    """``folder`` and its missing parents made 0700 (an existing folder is left as it is)."""
    Path(folder).mkdir(mode=0o700, parents=True, exist_ok=True)


def narrow(path: Path) -> list[Path]:
    """The SQLite database ``path`` and its companion files made 0600 where they are wider; the ones
    narrowed."""
    narrowed = []
    for suffix in SQLITE_SUFFIXES:
        file = Path(f"{path}{suffix}")
        try:
            mode = stat.S_IMODE(file.lstat().st_mode)
        except OSError:
            continue
        if mode & OWNER_ONLY and not file.is_symlink():
            os.chmod(file, mode & ~OWNER_ONLY)
            narrowed.append(file)
    if narrowed:
        log.warning("the database files %s were readable by others: now owner-only",
                    ", ".join(str(file) for file in narrowed))
    return narrowed


def compact_allocator(arenas: int = 2, mmap_threshold: int = 256 * 1024) -> bool:
    """glibc's allocator for a web process that handles large uploads in many threads: at most
    ``arenas`` arenas (it makes up to 8 per core, each keeping what it once held), and blocks over
    ``mmap_threshold`` mapped apart and given back when freed (by default the threshold grows with
    the largest block freed, so a refused 20 MB upload's buffers stay). Returns whether it was set
    (glibc only)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_arena_max, m_mmap_threshold = -8, -3  # <malloc.h>
    return bool(mallopt(m_arena_max, arenas)) and bool(mallopt(m_mmap_threshold, mmap_threshold))

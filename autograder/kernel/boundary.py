"""What a student's kernel may read and which isolation it gets: the isolation status of this
machine (probed once with a real kernel), the folders a kernel imports from, its uid, the course's
paths it is given (:class:`CoursePaths`), and the launcher copied beside it.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from autograder.course import Course, current
from autograder.kernel.errors import IsolationUnavailable
from autograder.kernel.isolation import Piece, status_pieces

__all__ = [
    "CoursePaths",
    "IsolationUnavailable",
    "import_folders",
    "python_environment",
]

LAUNCHER = Path(__file__).with_name("sandbox_launcher.py")
ISOLATION_MODULE = Path(__file__).with_name("isolation.py")
# Never readable by a kernel, wherever it is installed (``pip install .`` puts it in site-packages).
PACKAGE_DIR = Path(__file__).resolve().parent.parent  # autograder/, not kernel/


@dataclass(frozen=True)
class CoursePaths:
    """What a kernel is given of the course: its data folder (readable, seen as ``./data``), the
    environment variable naming the corpora, and the folders it must never read."""

    data: Path
    data_variable: str
    private: tuple[Path, ...]

    @classmethod
    def of(cls, course: Course | None = None) -> "CoursePaths":
        """The paths of ``course`` (default: the course being graded)."""
        course = course or current()
        return cls(Path(course.data), course.data_variable, tuple(course.private_folders()))


def copy_launcher(folder: Path) -> Path:
    """The kernel launcher and the isolation module it imports, copied into ``folder`` (so that a
    kernel never has the autograder package on its path); the launcher's path."""
    shutil.copy(ISOLATION_MODULE, folder / "autograder_isolation.py")
    return Path(shutil.copy(LAUNCHER, folder / "launch_kernel.py"))


REFUSED = "refused"  # in a fence status: no kernel may start here (it would run as root)


def refused(status: str) -> bool:
    """Is this an isolation status under which no kernel may start?"""
    return not boundary_mode(status) and f"; {REFUSED}:" in status


def full_boundary(status: str) -> bool:
    """The whole boundary: Landlock, seccomp, namespaces and a uid or user namespace of its own.
    What a Dask worker or the service must report to take jobs without ``--allow-fence``."""
    return (boundary_mode(status) and Piece.SECCOMP in status_pieces(status)
            and " (no " not in status)


def boundary_mode(status: str) -> bool:
    return status.startswith(Piece.LANDLOCK)


def own_uid(status: str) -> bool:
    """Does a kernel of this isolation status run under a uid of its own?"""
    pieces = status_pieces(status)
    fence_uid = pieces[0] == Piece.FENCE and Piece.UID in pieces
    return os.geteuid() == 0 and (boundary_mode(status) or fence_uid)


_uid_counter = itertools.count()


def kernel_uid() -> int:
    """An unprivileged uid no other kernel running now has: from this process's pid and a
    counter."""
    return 1_000_000 + os.getpid() * 8 + next(_uid_counter) % 8


def python_and_system_folders(private: tuple[Path, ...] | None = None) -> list[Path]:
    """What a kernel may read and run: the Python installation, the environment, system libraries,
    and every other folder this interpreter imports from (:func:`import_folders`)."""
    folders = {
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sys.exec_prefix),
        Path(sys.executable).resolve().parent.parent,
    }
    folders |= {
        Path(p) for p in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt/conda")
    }
    folders |= set(import_folders(private))
    return sorted(folder for folder in folders if folder.exists())


def import_folders(private: tuple[Path, ...] | None = None) -> list[Path]:
    """See :func:`_import_folders`; ``private``: the course's private folders (default: the
    course being graded)."""
    if private is None:
        private = tuple(current().private_folders())
    return list(_import_folders(os.environ.get("PYTHONPATH", ""), private))


@functools.lru_cache(maxsize=8)
def _import_folders(python_path: str, course_private: tuple[Path, ...]) -> tuple[Path, ...]:
    """The folders a kernel needs, besides the Python installation, to import what this interpreter
    imports: ``PYTHONPATH`` (``pip install --target``), the site folders and the user site (``pip
    install --user``), and the folders their ``.pth`` files add. Never the folder of the script or
    the current folder (``sys.path[0]``: a course checkout, the instructor's working folder), nor a
    folder inside or above the course's files or another private folder (a checkout, its parent
    folder, its tests), unless it is a site folder (``site-packages``: a virtual environment inside
    a checkout, or one the kit is installed in, whose private packages are left out one by one:
    ``isolation.rules_excluding``)."""
    import site

    sites = list(site.getsitepackages()) + (
        [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
    )
    candidates = [entry for entry in python_path.split(os.pathsep) if entry] + sites
    for site_path in sites:
        candidates += _pth_folders(Path(site_path))
    private = [folder.resolve() for folder in (*course_private, PACKAGE_DIR)]
    found: list[Path] = []
    for entry in candidates:
        if not os.path.isabs(entry) or not os.path.exists(entry):
            continue
        folder = Path(entry).resolve()
        # A site folder is an installation (a virtual environment may well live inside a checkout);
        # any other folder near the course's files may be a copy of them.
        site_folder = folder.name in ("site-packages", "dist-packages")
        near_private = any(folder.is_relative_to(p) or p.is_relative_to(folder) for p in private)
        if near_private and not (site_folder and folder not in private):
            continue
        found.append(folder)
    return tuple(dict.fromkeys(found))


def _pth_folders(site_folder: Path) -> list[str]:
    """The folders the ``.pth`` files of a site folder add to ``sys.path`` (as ``site`` reads
    them)."""
    folders: list[str] = []
    try:
        files = sorted(site_folder.glob("*.pth"))
    except OSError:
        return folders
    for pth in files:
        try:
            lines = pth.read_text(errors="replace").splitlines()
        except OSError:
            continue
        folders += [
            str(site_folder / line.rstrip())
            for line in lines
            if line.strip() and not line.startswith(("#", "import ", "import\t"))
        ]
    return folders


def python_environment(private: tuple[Path, ...] | None = None) -> dict[str, str]:
    """What a kernel's (and the zygote's) interpreter needs in its environment to import what
    this one does: ``PYTHONPATH`` (its entries a kernel may read) and ``PYTHONUSERBASE`` (the user
    site, whose ``.pth`` files the kernel's own ``site`` then reads: its ``HOME`` is its work
    folder)."""
    import site

    env = {}
    allowed = set(import_folders(private))
    entries = [
        entry
        for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if entry
        and os.path.isabs(entry)
        and Path(entry).exists()
        and Path(entry).resolve() in allowed
    ]
    if entries:
        env["PYTHONPATH"] = os.pathsep.join(entries)
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user_site and os.path.isdir(user_site) and Path(user_site).resolve() in allowed:
        env["PYTHONUSERBASE"] = site.getuserbase()
    return env

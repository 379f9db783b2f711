"""What a student's kernel may read and which isolation it gets: the isolation status of this
machine (probed once with a real kernel), the folders a kernel imports from, its uid, the course's
paths it is given (:class:`CoursePaths`), and the launcher copied beside it.
"""

from __future__ import annotations

import functools
import itertools
import os
import platform
import shutil
import stat
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from autograder import isolation, tempdirs
from autograder.course import Course, current
from autograder.kernel_errors import IsolationUnavailable
from autograder.limits import Limits

__all__ = [
    "CoursePaths",
    "IsolationUnavailable",
    "isolation_status",
    "import_folders",
    "python_environment",
]

LAUNCHER = Path(__file__).with_name("sandbox_launcher.py")
ISOLATION_MODULE = Path(__file__).with_name("isolation.py")
# Never readable by a kernel, wherever it is installed (``pip install .`` puts it in site-packages).
PACKAGE_DIR = Path(__file__).resolve().parent


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
    if os.environ.get("AUTOGRADER_ISOLATION") == "fence":
        return _fence("AUTOGRADER_ISOLATION=fence")
    if not sys.platform.startswith("linux"):
        return _fence(f"no Landlock on {sys.platform}")
    abi = isolation.landlock_abi()
    if abi < 1:
        if isolation.syscall_table() is None:
            return _fence(f"no system call table for {platform.machine()}")
        return _fence("this Linux kernel has no Landlock")
    try:
        applied = _probe(f"landlock-abi{abi}")
    except (
        Exception
    ) as failed:  # KernelDied, CallTimeout, OSError, zmq's errors (a socket path too long)...
        return _fence(
            f"the boundary could not be built: {_one_line(f'{type(failed).__name__}: {failed}')}"
        )
    if not applied.startswith("landlock"):
        return _fence(f"the boundary could not be built: the probe kernel said {applied!r}")
    cgroups = isolation.create_kernel_cgroups(f"bpe-probe-{os.getpid()}", 1 << 30, 64)
    isolation.remove_cgroups(cgroups)
    pieces, _, missing = applied.partition(" ")
    return pieces + ("+cgroup" if cgroups else "") + (f" {missing}" if missing else "")


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
        applied = _probe("fence+uid" if os.geteuid() == 0 else "fence")
    except Exception as failed:
        detail = _one_line(f"{type(failed).__name__}: {failed}", 200)
        return f"fence ({why}; {REFUSED}: the fence's probe kernel failed: {detail})"
    if not applied.startswith("fence"):
        return f"fence ({why}; {REFUSED}: the probe kernel said {applied!r})"
    return f"{applied} ({why})"


REFUSED = "refused"  # in a fence status: no kernel may start here (it would run as root)


def refused(status: str) -> bool:
    """Is this an isolation status under which no kernel may start?"""
    return not boundary_mode(status) and f"; {REFUSED}:" in status


def full_boundary(status: str) -> bool:
    """The whole boundary: Landlock, seccomp, namespaces and a uid or user namespace of its own.
    What a Dask worker or the service must report to take jobs without ``--allow-fence``."""
    pieces = status.split(" ")[0].split("+")
    return boundary_mode(status) and "seccomp" in pieces and " (no " not in status


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
    """Start a real kernel as ``status`` says (never through the zygote) and ask it what it got."""
    from autograder.kernel import KernelSession  # the probe is a kernel like any other

    with tempdirs.folder("probe") as folder:
        folder.chmod(0o711)
        session = KernelSession(
            folder / "work",
            Limits(cell_seconds=60, call_seconds=60, notebook_seconds=90),
            status=status,
            use_zygote=False,
        )
        with session:
            return session.calls.evaluate(
                f"__import__('os').environ.get({APPLIED!r}, '')", timeout=60
            )


APPLIED = "AUTOGRADER_ISOLATION_APPLIED"  # set by sandbox_launcher in the kernel: what it applied


def boundary_mode(status: str) -> bool:
    return status.startswith("landlock")


def own_uid(status: str) -> bool:
    """Does a kernel of this isolation status run under a uid of its own?"""
    pieces = status.split(" ")[0].split("+")
    fence_uid = pieces[0] == "fence" and "uid" in pieces
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

"""A student's notebook running in a fresh, limited Jupyter kernel that the grader can call into.

One :class:`KernelSession` per submission: it runs cells with a per-cell time limit, survives
infinite loops (interrupt, then restart) and kernel deaths (restart and replay the cells that had
run), and lets the grader call the student's functions with plain values (see ``codec.py``).
"""
from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import itertools
import json
import os
import platform
import queue
import select
import signal
import stat
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import zmq
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.provisioning import LocalProvisioner

from autograder import codec, isolation, shapes, tempdirs
from autograder.course import current

LAUNCHER = Path(__file__).with_name("sandbox_launcher.py")
ISOLATION_MODULE = Path(__file__).with_name("isolation.py")
# Never readable by a kernel, wherever it is installed (``pip install .`` puts it in site-packages).
PACKAGE_DIR = Path(__file__).resolve().parent
KERNEL_NAME = "autograder-sandbox"
CODEC_MODULE = "_autograder_codec"
# Read once: every kernel of a run must speak the same protocol as this process, even if the
# file is edited while a batch is running.
CODEC_SOURCE = inspect.getsource(codec)


@dataclass(frozen=True)
class Limits:
    """Grading limits; every one can be set from the command line."""

    cell_seconds: float = 60.0
    call_seconds: float = 10.0
    notebook_seconds: float = 600.0
    memory_bytes: int = 4 * 1024**3
    interrupt_grace_seconds: float = 5.0
    # Reading what a cell printed takes at most this long: a kernel may publish without end.
    drain_seconds: float = 2.0
    # A notebook that kills every kernel would otherwise be replayed without end.
    max_restarts: int = 3
    # A kernel's message larger than this is dropped unread (ZMQ_MAXMSGSIZE) before the grader
    # decodes it: a 200 MB reply grew the grader by 1.3 GB. The call then fails like a dead kernel.
    reply_bytes: int = 32 * 1024**2
    # The boundary's other limits (boundary mode only: they need the kernel in its own namespaces).
    disk_bytes: int = 512 * 1024**2  # the work folder is a tmpfs of this size
    file_bytes: int = 256 * 1024**2
    processes: int = 256  # per kernel uid: threads count too
    open_files: int = 1024
    cpu_seconds: int = 1800
    require_isolation: bool = False  # refuse to grade rather than fall back to the fence

    def rlimits(self) -> dict[str, int]:
        limits = {"RLIMIT_AS": self.memory_bytes, "RLIMIT_FSIZE": self.file_bytes, "RLIMIT_NOFILE": self.open_files,
                  "RLIMIT_CPU": self.cpu_seconds, "RLIMIT_CORE": 0}
        if os.geteuid() == 0:  # RLIMIT_NPROC counts every process of the uid: only a uid of its own
            limits["RLIMIT_NPROC"] = self.processes
        return {name: value for name, value in limits.items() if value > 0 or name == "RLIMIT_CORE"}


class IsolationUnavailable(RuntimeError):
    """``require_isolation`` was asked for where the boundary cannot be built."""


def copy_launcher(folder: Path) -> Path:
    """The kernel launcher and the isolation module it imports, copied into ``folder`` (so that a
    kernel never has the autograder package on its path); the launcher's path."""
    shutil.copy(ISOLATION_MODULE, folder / "autograder_isolation.py")
    return Path(shutil.copy(LAUNCHER, folder / "launch_kernel.py"))


@functools.lru_cache(maxsize=None)
def isolation_status() -> str:
    """What isolation a kernel started by this process gets, in words for grades.csv.

    Probed once per process by starting a real kernel (not through the zygote) and asking it, before
    any student code runs in it, what its launcher applied: ``"landlock-abi7+seccomp+netns+pidns+uid+cgroup"``
    when the boundary holds here (a piece that could not be had is named: ``"landlock-abi7+netns+pidns+uid
    (no seccomp: ...)"``); else ``"fence (...why...)"``, or ``"fence+uid (...)"`` when the grader is
    root and the fence's kernel runs under a uid of its own. A kernel that dies at start says why
    (its last lines of output). ``AUTOGRADER_ISOLATION=fence`` forces the fence (tests).
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
    except Exception as failed:  # KernelDied, CallTimeout, OSError, zmq's errors (a socket path too long)...
        return _fence(f"the boundary could not be built: {_one_line(f'{type(failed).__name__}: {failed}')}")
    if not applied.startswith("landlock"):
        return _fence(f"the boundary could not be built: the probe kernel said {applied!r}")
    cgroups = isolation.create_kernel_cgroups(f"bpe-probe-{os.getpid()}", 1 << 30, 64)
    isolation.remove_cgroups(cgroups)
    pieces, _, missing = applied.partition(" ")
    return pieces + ("+cgroup" if cgroups else "") + (f" {missing}" if missing else "")


def _one_line(text: str, limit: int = 300) -> str:
    return " ".join(text.split())[-limit:]


def _fence(why: str) -> str:
    """The fence, and whether its kernel runs under a uid of its own (root only, and only where that
    uid can run this Python: a probe kernel says)."""
    if os.geteuid() != 0:
        return f"fence ({why})"
    closed = _closed_to_others([Path(sys.executable).resolve(), Path(sysconfig.get_paths()["stdlib"]), *import_folders()])
    if closed:
        return f"fence ({why}; no uid of its own: {closed} is closed to other users)"
    try:
        applied = _probe("fence+uid")
    except Exception as failed:
        return f"fence ({why}; no uid of its own: {_one_line(str(failed), 200)})"
    return f"{applied} ({why})" if applied == "fence+uid" else f"fence ({why})"


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
    with tempdirs.folder("probe") as folder:
        folder.chmod(0o711)
        session = KernelSession(folder / "work", Limits(cell_seconds=60, call_seconds=60, notebook_seconds=90),
                                status=status, use_zygote=False)
        with session:
            return session._evaluate(f"__import__('os').environ.get({APPLIED!r}, '')", timeout=60)


APPLIED = "AUTOGRADER_ISOLATION_APPLIED"  # set by sandbox_launcher in the kernel: what it applied


def boundary_mode(status: str) -> bool:
    return status.startswith("landlock")


def own_uid(status: str) -> bool:
    """Does a kernel of this isolation status run under a uid of its own?"""
    return os.geteuid() == 0 and (boundary_mode(status) or status.startswith("fence+uid"))


_uid_counter = itertools.count()


def _kernel_uid() -> int:
    """An unprivileged uid no other kernel running now has: from this process's pid and a counter."""
    return 1_000_000 + os.getpid() * 8 + next(_uid_counter) % 8


def _python_and_system_folders() -> list[Path]:
    """What a kernel may read and run: the Python installation, the environment, system libraries,
    and every other folder this interpreter imports from (:func:`import_folders`)."""
    folders = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(sys.executable).resolve().parent.parent}
    folders |= {Path(p) for p in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt/conda")}
    folders |= set(import_folders())
    return sorted(folder for folder in folders if folder.exists())


def import_folders() -> list[Path]:
    return list(_import_folders(os.environ.get("PYTHONPATH", ""), current().spec))


@functools.lru_cache(maxsize=8)
def _import_folders(python_path: str, course_spec: str) -> tuple[Path, ...]:
    """The folders a kernel needs, besides the Python installation, to import what this interpreter
    imports: ``PYTHONPATH`` (``pip install --target``), the site folders and the user site (``pip
    install --user``), and the folders their ``.pth`` files add. Never the folder of the script or
    the current folder (``sys.path[0]``: a course checkout, the instructor's working folder), nor a
    folder inside or above the course's files or another private folder (a checkout, its parent
    folder, its tests), unless it is a site folder (``site-packages``: a virtual environment inside
    a checkout, or one the kit is installed in, whose private packages are left out one by one:
    ``isolation.rules_excluding``)."""
    import site

    sites = list(site.getsitepackages()) + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    candidates = [entry for entry in python_path.split(os.pathsep) if entry] + sites
    for folder in sites:
        candidates += _pth_folders(Path(folder))
    private = [folder.resolve() for folder in (*current().private_folders(), PACKAGE_DIR)]
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
    """The folders the ``.pth`` files of a site folder add to ``sys.path`` (as ``site`` reads them)."""
    folders = []
    try:
        files = sorted(site_folder.glob("*.pth"))
    except OSError:
        return folders
    for pth in files:
        try:
            lines = pth.read_text(errors="replace").splitlines()
        except OSError:
            continue
        folders += [str(site_folder / line.rstrip()) for line in lines
                    if line.strip() and not line.startswith(("#", "import ", "import\t"))]
    return folders


def python_environment() -> dict[str, str]:
    """What a kernel's (and the zygote's) interpreter needs in its environment to import what this one
    does: ``PYTHONPATH`` (its entries a kernel may read) and ``PYTHONUSERBASE`` (the user site, whose
    ``.pth`` files the kernel's own ``site`` then reads: its ``HOME`` is its work folder)."""
    import site

    env = {}
    allowed = set(import_folders())
    entries = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
               if entry and os.path.isabs(entry) and Path(entry).exists() and Path(entry).resolve() in allowed]
    if entries:
        env["PYTHONPATH"] = os.pathsep.join(entries)
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user_site and os.path.isdir(user_site) and Path(user_site).resolve() in allowed:
        env["PYTHONUSERBASE"] = site.getuserbase()
    return env


class ForkedProcess:
    """The part of ``subprocess.Popen`` that jupyter_client's provisioner uses, for a kernel process
    that the zygote (not this process) started: watched through a pidfd, so a reused pid is never
    mistaken for it."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int):
        self.pid, self.returncode = pid, None
        self._pidfd = os.pidfd_open(pid)

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._pidfd], [], [], 0)[0]:
            self.returncode = -signal.SIGKILL  # not our child: its status is the zygote's to reap
            os.close(self._pidfd)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            select.select([self._pidfd], [], [], 0.05)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            try:
                signal.pidfd_send_signal(self._pidfd, signum)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class Zygote:
    """One process per grader process that has imported ipykernel and the labs' libraries, and
    forks a fresh kernel launcher on request (``sandbox_launcher.zygote``): a kernel then starts in
    a few milliseconds of CPU instead of 0.5 s, and ``import pandas`` in a notebook costs nothing.
    It is started from a clean environment, never forked from the grader, so a kernel inherits
    none of the grader's memory (hidden tests, reference answers). ``AUTOGRADER_ZYGOTE=0`` turns it off."""

    def __init__(self):
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._folder: Path | None = None

    def _start(self) -> None:
        self._stop()
        folder = self._folder = tempdirs.make("zygote")
        launcher = copy_launcher(folder)
        env = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL", "TZ") if key in os.environ}
        env.update(HOME=str(folder), MPLBACKEND="Agg", MPLCONFIGDIR=str(folder / "matplotlib"), PYTHONHASHSEED="0",
                   OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
        env.update(python_environment())  # the zygote imports ipykernel where this interpreter finds it
        with open(folder / "zygote.log", "ab") as log:
            self._process = subprocess.Popen([sys.executable, str(launcher), "--zygote"],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
                                             cwd=folder, start_new_session=True)
        # Ended, and its folder removed, when this process ends: at exit, and at the end of a
        # multiprocessing worker (which runs its finalizers, not atexit).
        import multiprocessing.util

        multiprocessing.util.Finalize(self, Zygote.close, args=(self,), exitpriority=10)

    def _stop(self) -> None:
        """End the zygote (the kernels it forked die with it) and remove its folder."""
        process, folder, self._process, self._folder = self._process, self._folder, None, None
        if process is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
            try:
                process.wait(2)
            except subprocess.TimeoutExpired:
                process.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(5)
        if folder is not None:
            tempdirs.remove(folder)

    def close(self) -> None:
        with self._lock:
            self._stop()

    def spawn(self, argv: list[str], env: dict, cwd: str, log: str, preload: list[str]) -> ForkedProcess | None:
        """A new kernel launcher process; None when the zygote cannot fork safely any more."""
        request = json.dumps({"argv": argv, "env": env, "cwd": cwd, "log": log, "preload": preload}).encode() + b"\n"
        with self._lock:
            for _ in range(2):
                if self._process is None or self._process.poll() is not None:
                    self._start()
                try:
                    self._process.stdin.write(request)
                    self._process.stdin.flush()
                    if select.select([self._process.stdout], [], [], 60)[0]:
                        line = self._process.stdout.readline()
                        if line.strip() == b"0":
                            return None
                        if line.strip():
                            return ForkedProcess(int(line))
                except (BrokenPipeError, ValueError, OSError):
                    pass
                self._process.kill()
                self._stop()
        raise KernelDied("the kernel zygote could not start a kernel")


ZYGOTE = Zygote()


class ZygoteProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, except that the kernel process comes from :data:`ZYGOTE`."""

    async def launch_kernel(self, cmd: list[str], **kwargs):
        log = kwargs.get("stdout")
        process = ZYGOTE.spawn(cmd, dict(kwargs.get("env") or {}), str(kwargs.get("cwd") or os.getcwd()),
                               getattr(log, "name", os.devnull), list(getattr(self.parent, "autograder_preload", ())))
        if process is None:
            return await super().launch_kernel(cmd, **kwargs)
        self.process = process
        self.pid = self.pgid = self.process.pid
        self.cwd = kwargs.get("cwd")
        return self.connection_info


def imported_modules(sources) -> tuple[str, ...]:
    """The modules that code imports at its top level, in order (what a released notebook imports,
    for :class:`Zygote`). Code that does not parse is skipped.

    >>> imported_modules(["import pandas as pd, os", "from matplotlib import pyplot", "x = 1 +"])
    ('pandas', 'os', 'matplotlib', 'matplotlib.pyplot')
    """
    found: list[str] = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                found += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append(node.module)
                found += [f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*"]
    return tuple(dict.fromkeys(found))


def zygote_enabled() -> bool:
    return os.environ.get("AUTOGRADER_ZYGOTE", "1") != "0" and hasattr(os, "pidfd_open")


@dataclass
class CellRun:
    status: str  # ok | error | timeout | died | skipped
    error: str = ""
    stdout: str = ""
    seconds: float = 0.0


class CallResults:
    """The results of :meth:`KernelSession.call_each`, decoded as they are read: reading the
    result of a call that raised (or ran out of time) raises, and so does reading any result after
    it, since the batch stopped there, as a loop would have."""

    def __init__(self, session: "KernelSession", name: str, outcomes: list, requested: int):
        self._session, self._name, self._outcomes, self._requested = session, name, outcomes, requested

    def __len__(self) -> int:
        return self._requested

    def __getitem__(self, index: int):
        if not -self._requested <= index < self._requested:
            raise IndexError("call_each result index out of range")
        index %= self._requested
        outcome = self._outcomes[min(index, len(self._outcomes) - 1)] if self._outcomes else ["timeout"]
        if index >= len(self._outcomes) and outcome[0] == "returned":  # (never: the batch ran every call)
            raise KernelDied("the grader's call failed in the kernel: missing results")
        if outcome[0] == "timeout":
            raise CallTimeout(f"did not finish within {self._session.limits.call_seconds:g} s")
        return self._session._result(self._name, outcome)

    def __iter__(self):
        for index in range(self._requested):
            yield self[index]

    def __eq__(self, other) -> bool:
        return list(self) == other

    __hash__ = None


class KernelDied(Exception):
    """The kernel died (memory cap, os._exit, a crash) or stopped answering."""


class CallTimeout(Exception):
    """A call into the student's code did not finish in time."""


class StudentRaised(Exception):
    """The student's function raised an exception that is not a built-in class."""


# The clocks (``KernelSession._started_at``, one per file: grade.py gives every kernel of a file its
# own) of files whose hidden inputs have reached a kernel: a kernel of theirs that dies at start no
# longer has its last words shown.
_HIDDEN_INPUT_SENT: set[float] = set()
OWN_EXCEPTION = "an exception of a class of its own"  # how a hidden test's feedback names such a class
TIME_USED_UP = "could not run: the notebook's time limit was used up"
KERNEL_START_SECONDS = 60  # the longest wait for a kernel's first answer, time left permitting


@dataclass
class KernelSession:
    workdir: Path
    limits: Limits = field(default_factory=Limits)
    data_dir: Path | None = None
    denied: tuple[Path, ...] = ()
    preload: tuple[str, ...] = ()  # modules the released notebook imports (see Zygote)
    status: str | None = None  # the isolation to give the kernel (default: isolation_status(); the probe names its own)
    use_zygote: bool = True  # False: start the kernel the usual way (the probe: no zygote in a process that forks workers)

    def __post_init__(self):
        self._replay: list[tuple[str, float]] = []
        self.sent_arguments: list = []  # every argument a hidden test passed, to keep them out of feedback
        self._started_at = time.monotonic()
        self.restarts = 0
        self.given_up = ""  # why the session stopped restarting kernels, once it has

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "KernelSession":
        if self.seconds_left <= 0:  # no kernel started only to be told so
            raise CallTimeout(TIME_USED_UP)
        self.isolation = self.status or isolation_status()
        if self.limits.require_isolation and not boundary_mode(self.isolation):
            raise IsolationUnavailable(f"kernel isolation was required but is not available here: {self.isolation}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._private = tempdirs.make("kernel")
        self._uid = _kernel_uid() if own_uid(self.isolation) else None
        # The kernel's uid passes through (never lists) the folders above its own.
        for folder in (self._private, self.workdir.parent):
            folder.chmod(0o711)
        self._sockets = self._private / "sockets"
        self._sockets.mkdir(mode=0o700)
        # Memory and processes of the kernel and all its children together (rlimits are per process).
        self._cgroups = (isolation.create_kernel_cgroups(self._private.name, self.limits.memory_bytes, self.limits.processes)
                         if "cgroup" in self.isolation else [])
        (self._private / "root").mkdir()  # where the kernel's own root file system is mounted
        if self._uid is not None:
            os.chown(self.workdir, self._uid, self._uid)
            os.chown(self._sockets, self._uid, self._uid)
        spec_dir = self._private / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        launcher = copy_launcher(self._private)
        (spec_dir / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, str(launcher), "-f", "{connection_file}", "--HistoryManager.enabled=False"],
            "display_name": "grading sandbox", "language": "python"}))
        self._specs = KernelSpecManager(kernel_dirs=[str(self._private / "kernels")])
        if not boundary_mode(self.isolation):
            self._link_course_data()  # in boundary mode the launcher links it inside its own tmpfs
        try:
            self._start()
        except BaseException:  # a kernel that started, then failed (its codec, the notebook's time): shut it too
            self._shut_down(getattr(self, "km", None), getattr(self, "kc", None), self._private, self._cgroups)
            raise
        return self

    def __exit__(self, *exc) -> None:
        # Shutting a kernel down is mostly waiting for it to exit: let a thread do it while the
        # worker goes on to the next notebook. Not a daemon, so that no kernel outlives the
        # process (interpreter exit, and multiprocessing's workers, join such threads).
        threading.Thread(target=self._shut_down, args=(self.km, self.kc, self._private, self._cgroups), daemon=False).start()

    @staticmethod
    def _stop_kernel(km, kc) -> None:
        """Close the channels, then end the kernel: each on its own, so that channels that would not
        close never keep the kernel alive."""
        with contextlib.suppress(Exception):
            if kc is not None:
                kc.stop_channels()
        with contextlib.suppress(Exception):
            if km is not None:
                km.shutdown_kernel(now=True)

    @classmethod
    def _shut_down(cls, km, kc, private: Path, cgroups: list[str]) -> None:
        cls._stop_kernel(km, kc)
        isolation.remove_cgroups(cgroups)
        shutil.rmtree(private, ignore_errors=True)

    def _environment(self) -> dict[str, str]:
        home = str(self.workdir)
        env = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL", "TZ") if key in os.environ}
        env.update(HOME=home, MPLBACKEND="Agg", MPLCONFIGDIR=str(self.workdir / ".matplotlib"),
                   IPYTHONDIR=str(self.workdir / ".ipython"), XDG_CACHE_HOME=str(self.workdir / ".cache"),
                   TMPDIR=str(self.workdir / "tmp"), PYTHONHASHSEED="0", OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", JUPYTER_RUNTIME_DIR=str(self._sockets),
                   PYTHONDONTWRITEBYTECODE="1")
        course = current()
        if self.data_dir:
            env[course.data_variable] = str(self.data_dir)
        course_data = course.data
        allowed = [self.workdir, self._private, Path(sys.prefix), Path(sys.base_prefix), course_data, *import_folders()]
        if self.data_dir:
            allowed.append(self.data_dir)
        env.update(python_environment())
        settings = {"mode": "boundary" if boundary_mode(self.isolation) else "fence",
                    "memory_bytes": self.limits.memory_bytes,
                    "denied": [str(p) for p in (*course.private_folders(), PACKAGE_DIR, *self.denied)],
                    "allowed": [str(p) for p in allowed], "uid": self._uid, "gid": self._uid}
        if settings["mode"] == "boundary":
            settings.update(
                workdir=str(self.workdir), sockets_dir=str(self._sockets),
                connection_file=self.km.connection_file, disk_bytes=self.limits.disk_bytes,
                root_dir=str(self._private / "root"), cgroups=self._cgroups,
                links={"data": str(course_data)},
                read_only=[str(p) for p in _python_and_system_folders() + [course_data] + ([self.data_dir] if self.data_dir else [])],
                rlimits=self.limits.rlimits())
        env["AUTOGRADER_SANDBOX"] = json.dumps(settings)
        return env

    def _link_course_data(self) -> None:
        """``./data`` in the kernel's folder is the course's data folder (the lab documents), as
        when a student runs a notebook from a clone of the repository."""
        link = self.workdir / "data"
        if not link.exists():
            link.symlink_to(current().data, target_is_directory=True)

    def _start(self) -> None:
        # A new manager each time: shutting a kernel down terminates its manager's ZMQ context.
        # Unix sockets in a folder of the kernel's own, never TCP: a network namespace has none.
        self.km = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=self._specs, transport="ipc",
                                ip=str(self._sockets / f"k{self.restarts}"),
                                connection_file=str(self._private / f"kernel-{self.restarts}.json"))
        if zygote_enabled() and self.use_zygote:
            self.km.kernel_id = f"bpe-{self._private.name}-{self.restarts}"
            self.km.provisioner = ZygoteProvisioner(kernel_id=self.km.kernel_id, kernel_spec=self.km.kernel_spec,
                                                    parent=self.km)
            self.km.autograder_preload = self.preload
        self.km.write_connection_file()
        if self._uid is not None:  # readable by the kernel's uid alone; Landlock keeps it read-only
            os.chown(self.km.connection_file, self._uid, self._uid)
        # The kernel process's own output (ipykernel's start-up warnings) goes to a log beside it;
        # what the notebook prints travels on the output channel as usual.
        # A log of each start's own: what a killed kernel wrote to its stderr (after a hidden input
        # reached it) is never in the message of a restart that failed.
        log_path = self._private / f"kernel-{self.restarts}.log"
        with open(log_path, "ab") as log:
            self.km.start_kernel(cwd=str(self.workdir), env=self._environment(), stdout=log, stderr=log)
        self.kc = self.km.client()
        self.kc.context.setsockopt(zmq.MAXMSGSIZE, self.limits.reply_bytes)  # see Limits.reply_bytes
        self.kc.start_channels()
        try:
            # The notebook's time limit caps the wait too: a restart begun just before the limit
            # does not hold the grader for a minute past it on a busy machine.
            self.kc.wait_for_ready(timeout=min(KERNEL_START_SECONDS, max(1.0, self.seconds_left)))
        except RuntimeError as error:  # the kernel died while starting, or did not answer in time
            if self.seconds_left <= 0:
                raise CallTimeout(TIME_USED_UP) from None
            raise KernelDied(f"the kernel did not start: {error}{self._last_words(log_path)}") from None
        self._install_codec()

    def _last_words(self, log_path: Path) -> str:
        """The last lines a kernel that died at start wrote (say, an ImportError), for the row; only
        while no hidden input has reached a kernel of this file (a restarted kernel's start-up
        code could print one that the notebook saved), and only for the first start."""
        if self.restarts or self._started_at in _HIDDEN_INPUT_SENT:
            return ""
        try:
            lines = [line.strip() for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return ""
        if not lines:
            return ""
        shown = lambda text: "".join(c if c.isprintable() else "?" for c in text)  # noqa: E731
        before = " | ".join(lines[-6:-1])
        return (f"; the kernel's last words: {shown(lines[-1])[:300]}"
                + (f" (before that: {shown(before)[-300:]})" if before else ""))

    def _install_codec(self) -> None:
        code = (f"import sys as _s, types as _t\n_m = _t.ModuleType({CODEC_MODULE!r})\n"
                f"exec({CODEC_SOURCE!r}, _m.__dict__)\n_s.modules[{CODEC_MODULE!r}] = _m\ndel _s, _t, _m\n")
        self._execute(code, timeout=30, silent=True)

    def restart(self) -> None:
        """Fresh kernel, then replay every cell that had run, so the notebook's state comes back.

        Within the notebook's time limit and at most ``max_restarts`` times: after that the session
        gives up, and every later call fails at once as if the kernel had died."""
        self._stop_kernel(self.km, self.kc)
        if self.restarts >= self.limits.max_restarts:
            self.given_up = f"the kernel died {self.restarts + 1} times (limit {self.limits.max_restarts} restarts)"
            return
        if self.seconds_left <= 0:
            self.given_up = "the notebook's time limit was used up"
            return
        self.restarts += 1
        try:
            self._start()
        except (CallTimeout, KernelDied) as failed:  # out of time while starting, or it died at once
            self.given_up = f"the kernel could not be restarted ({failed})"
            return
        replayed = []
        for code, timeout in self._replay:
            if self.seconds_left <= 0:
                break  # replays count against the notebook's time limit like everything else
            try:
                self._execute(code, timeout=timeout)
            except CallTimeout:
                continue  # it ran in time before; without it the parts that need it fail on their own
            except KernelDied:
                break  # the notebook now kills every kernel: the rest is graded without state
            replayed.append((code, timeout))
        self._replay = replayed

    # -- running code ------------------------------------------------------------------------
    @property
    def seconds_left(self) -> float:
        return self.limits.notebook_seconds - (time.monotonic() - self._started_at)

    def _execute(self, code: str, timeout: float, silent: bool = False, expressions: dict | None = None) -> dict:
        """Run ``code``; the execute reply's content. Raises CallTimeout (kernel interrupted and
        answering again) or KernelDied (dead, or stuck after the interrupt)."""
        if self.given_up:
            raise KernelDied(self.given_up)
        if self.seconds_left <= 0:
            raise CallTimeout(TIME_USED_UP)
        timeout = min(timeout, self.seconds_left)  # the notebook's limit caps every request
        # stop_on_error=False: otherwise a cell that raises makes the kernel abort the requests right
        # after it, and a later definition cell would silently never run.
        msg_id = self._last_msg_id = self.kc.execute(code, silent=silent, store_history=False, allow_stdin=self.stdin_answer is not None, stop_on_error=False,
                                                     user_expressions=expressions or {})
        deadline = time.monotonic() + timeout
        interrupted = False
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if interrupted or not self.km.is_alive():
                    raise KernelDied("the kernel stopped answering")
                self.km.interrupt_kernel()
                interrupted = True
                deadline = time.monotonic() + self.limits.interrupt_grace_seconds
                continue
            try:
                reply = self._shell_msg(timeout=min(remaining, 1.0))
            except queue.Empty:
                if not self.km.is_alive():
                    raise KernelDied("the kernel died")
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        if interrupted:
            raise CallTimeout(f"did not finish within {timeout:g} s")
        return reply["content"]

    def _drain_output(self, until_idle_of: str | None = None, limit: int = 4000) -> str:
        """Read the output channel: what was printed, up to ``limit`` characters (long outputs cost
        nothing). With ``until_idle_of``, wait (briefly) for that request's outputs to end.

        Never longer than ``Limits.drain_seconds`` nor past the notebook's time: a kernel can publish
        output faster than it is read (a thread sending signed messages without end), and the output
        channel is never empty then."""
        chunks: list[str] = []
        size = 0
        deadline = time.monotonic() + max(0.0, min(self.limits.drain_seconds, self.seconds_left))
        while True:
            if time.monotonic() > deadline:
                return "".join(chunks)
            try:
                msg = self.kc.get_iopub_msg(timeout=0.2 if until_idle_of else 0)
            except queue.Empty:
                if not until_idle_of:
                    return "".join(chunks)
                continue
            own = not until_idle_of or msg["parent_header"].get("msg_id") == until_idle_of
            if msg["msg_type"] == "stream" and own and size < limit:
                text = msg["content"].get("text", "")
                chunks.append(text[: limit - size])
                size += len(text)
            if (until_idle_of and msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle"
                    and msg["parent_header"].get("msg_id") == until_idle_of):
                return "".join(chunks)

    def run_cell(self, code: str, replay: bool = True, capture: bool = False) -> CellRun:
        """Run one cell within the cell and notebook limits; remembered for replay if it ran."""
        timeout = min(self.limits.cell_seconds, self.seconds_left)
        if timeout <= 0:
            return CellRun("skipped", "the notebook's time limit was used up")
        started = time.monotonic()
        self._drain_output()
        try:
            content = self._execute(code, timeout=timeout)
        except CallTimeout:
            return CellRun("timeout", f"stopped after {timeout:g} s (time limit)", seconds=time.monotonic() - started)
        except KernelDied as died:
            self.restart()
            return CellRun("died", f"{died} while running this cell", seconds=time.monotonic() - started)
        stdout = self._drain_output(until_idle_of=self._last_msg_id) if capture else (self._drain_output() and "")
        seconds = time.monotonic() - started
        if content.get("status") == "ok":
            if replay:
                self._replay.append((code, timeout))
            return CellRun("ok", stdout=stdout, seconds=seconds)
        return CellRun("error", f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"[:500], stdout, seconds)

    # -- stand-ins (codec.py): a failing helper answered by the grader's reference, for one part ----
    stdin_answer = None  # prompt -> reply while a part's stand-ins are in place; None: stdin is off

    def _shell_msg(self, timeout: float) -> dict:
        """The next shell message; meanwhile, answer the kernel's input requests (stand-ins)."""
        if self.stdin_answer is None:
            return self.kc.get_shell_msg(timeout=timeout)
        shell, stdin = self.kc.shell_channel.socket, self.kc.stdin_channel.socket
        poller = zmq.Poller()
        poller.register(shell, zmq.POLLIN)
        poller.register(stdin, zmq.POLLIN)
        deadline = time.monotonic() + timeout
        while True:
            ready = dict(poller.poll(max(0.0, deadline - time.monotonic()) * 1000))
            if stdin in ready:
                request = self.kc.get_stdin_msg(timeout=0)
                if request["msg_type"] == "input_request":
                    self.kc.input(self.stdin_answer(request["content"].get("prompt", "")))
            if shell in ready:
                return self.kc.get_shell_msg(timeout=0)
            if time.monotonic() >= deadline:
                raise queue.Empty

    def stand_in(self, name: str) -> None:
        """The notebook's ``name`` becomes a stand-in that asks the grader (see codec.py)."""
        self._evaluate(self._codec("stand_in", name), timeout=self.limits.call_seconds)

    def put_back(self, name: str) -> None:
        self._evaluate(self._codec("put_back", name), timeout=self.limits.call_seconds)

    @property
    def part_passed(self) -> dict[str, bool]:
        """Part id -> whether it earned full points, for the parts graded so far."""
        return self.__dict__.setdefault("_part_passed", {})

    # -- calling into the notebook -------------------------------------------------------------
    def _evaluate(self, expression: str, timeout: float) -> str:
        try:
            # silent: no execute_input to publish, no post-run events; 10% less per call, measured.
            content = self._execute("", timeout=timeout, silent=True, expressions={"value": expression})
        except KernelDied:
            self.restart()
            raise
        self._drain_output()
        result = content.get("user_expressions", {}).get("value", {})
        if result.get("status") != "ok":
            if result.get("ename") == "KeyboardInterrupt":
                raise CallTimeout(f"did not finish within {timeout:g} s")
            raise KernelDied(f"the grader's call failed in the kernel: {result.get('ename')}: {result.get('evalue')}")
        return ast.literal_eval(result["data"]["text/plain"])

    def _codec(self, function: str, *args) -> str:
        return f"__import__('sys').modules[{CODEC_MODULE!r}].{function}(get_ipython().user_ns, {', '.join(map(repr, args))})"

    def snapshot(self, key: str, names: list[str]) -> None:
        """Remember, in the kernel, what ``names`` reach now (see ``codec.snapshot``)."""
        self._evaluate(self._codec("snapshot", key, json.dumps(list(names))), timeout=self.limits.call_seconds)

    def changed_since(self, keys: list[str]) -> list[str]:
        """The keys whose snapshot no longer holds (or was lost with a restarted kernel)."""
        return json.loads(self._evaluate(self._codec("changed_since", json.dumps(list(keys))),
                                         timeout=self.limits.call_seconds))

    def describe(self, name: str) -> str:
        return self._evaluate(self._codec("describe", name), timeout=self.limits.call_seconds)

    def fetch(self, name: str):
        return codec.decode(json.loads(self._evaluate(self._codec("fetch", name), timeout=self.limits.call_seconds)))

    def call(self, name: str, *args, **kwargs):
        """``name(*args, **kwargs)`` in the student's kernel; the result as plain values of exact types.

        A built-in exception the function raised is raised again here, with the same class and
        message; any other as :class:`StudentRaised`.
        """
        self.sent_arguments.append([list(args), kwargs])
        _HIDDEN_INPUT_SENT.add(self._started_at)
        payload = codec.pack((list(args), kwargs))
        outcome = json.loads(self._evaluate(self._codec("call_in_namespace", name, payload),
                                            timeout=self.limits.call_seconds))
        return self._result(name, outcome)

    def call_each(self, name: str, argument_lists: list, within: float | None = None, keywords: dict | None = None,
                  with_arguments: bool = False) -> "CallResults":
        """``name(*args, **keywords)`` for each of ``argument_lists``, in one round trip, as a loop
        would call them: each call has its own time limit (``call_seconds``, kept in the kernel), the
        batch stops at the first call that raised, and the results are read lazily, so that the error
        (or time-out) of call k is raised where a loop reaches case k, after the checks of the
        cases before it. ``within`` caps the whole batch (the part's time left). With
        ``with_arguments``, each result is ``(value, the arguments as the call left them)``: a hidden
        test can see whether a function changed its input."""
        argument_lists = [list(args) for args in argument_lists]
        keywords = dict(keywords or {})
        self.sent_arguments.extend(argument_lists)
        _HIDDEN_INPUT_SENT.add(self._started_at)
        if keywords:
            self.sent_arguments.append([[], keywords])
        payload = codec.pack(([codec.pack(args) for args in argument_lists], codec.pack(keywords)))
        seconds = self.limits.call_seconds
        timeout = seconds * max(1, len(argument_lists)) + self.limits.interrupt_grace_seconds
        if within is not None:
            timeout = min(timeout, max(within, 0.001))
        call = (self._codec("call_each_in_namespace", name, payload, seconds, True) if with_arguments
                else self._codec("call_each_in_namespace", name, payload, seconds))
        outcomes = json.loads(self._evaluate(call, timeout=timeout))
        return CallResults(self, name, outcomes, len(argument_lists))

    @property
    def shapes(self) -> dict:
        """Function name -> the shape of what it returned (types only; see ``shapes.py``)."""
        return self.__dict__.setdefault("_shapes", {})

    def _result(self, name: str, outcome: list):
        if outcome[0] == "returned":
            value = codec.decode(outcome[1])
            self.shapes[name] = shapes.merged(self.shapes.get(name), shapes.shape_of(value))
            if len(outcome) > 2:  # called with its arguments back (``call_each(..., with_arguments=True)``)
                return value, codec.decode(outcome[2])
            return value
        _, class_name, builtin, message = outcome
        import builtins

        kind = getattr(builtins, str(class_name), None) if builtin else None
        if isinstance(kind, type) and issubclass(kind, Exception):
            try:
                error = kind(message)  # the hidden test may read the message; the feedback never shows it
            except Exception:  # a built-in class that takes more than a message (UnicodeDecodeError): still named
                error = StudentRaised(f"{class_name}: {message}")
        else:  # a class the student made: its name is theirs to choose, like a message, so it is not repeated
            kind = None
            error = StudentRaised(f"{OWN_EXCEPTION}: {message}")
        # What the feedback may say of it, in the grader's words only: the function called and the
        # class if it is a built-in one (see check.py).
        error.autograder_student = (name, kind.__name__ if kind is not None else OWN_EXCEPTION)
        raise error

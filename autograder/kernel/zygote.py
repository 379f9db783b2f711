"""Kernels started in milliseconds: a :class:`Zygote` process per grader process, which has imported
ipykernel and the labs' libraries and forks a fresh kernel launcher on request, and the provisioner
through which jupyter_client asks it (``AUTOGRADER_ZYGOTE=0`` turns it off).
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from jupyter_client.provisioning import LocalProvisioner
from traitlets import Tuple

from autograder.kernel import tempdirs
from autograder.kernel.boundary import copy_launcher, python_environment
from autograder.kernel.errors import KernelDied


class ForkedProcess:
    """The part of ``subprocess.Popen`` that jupyter_client's provisioner uses, for a kernel process
    that the zygote (not this process) started: watched through a pidfd, so a reused pid is never
    mistaken for it."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int):
        self.pid, self.returncode = pid, None  # type: int, int | None
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
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0.0)
            select.select([self._pidfd], [], [], 0.05)
        return self.poll() or 0

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
    none of the grader's memory (hidden tests, reference answers). ``AUTOGRADER_ZYGOTE=0`` turns
    it off."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._folder: Path | None = None

    def _start(self) -> None:
        self._stop()
        folder = self._folder = tempdirs.make("zygote")
        launcher = copy_launcher(folder)
        env = {
            key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL", "TZ") if key in os.environ
        }
        env.update(
            HOME=str(folder),
            MPLBACKEND="Agg",
            MPLCONFIGDIR=str(folder / "matplotlib"),
            PYTHONHASHSEED="0",
            OMP_NUM_THREADS="1",
            OPENBLAS_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            PYTHONDONTWRITEBYTECODE="1",
        )
        # the zygote imports ipykernel where this interpreter finds it
        env.update(python_environment())
        with open(folder / "zygote.log", "ab") as log:
            self._process = subprocess.Popen(
                [sys.executable, str(launcher), "--zygote"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                cwd=folder,
                start_new_session=True,
            )
        # Ended, and its folder removed, when this process ends: at exit, and at the end of a
        # multiprocessing worker (which runs its finalizers, not atexit).
        import multiprocessing.util

        multiprocessing.util.Finalize(self, Zygote.close, args=(self,), exitpriority=10)

    def _stop(self) -> None:
        """End the zygote (the kernels it forked die with it) and remove its folder."""
        process, folder, self._process, self._folder = self._process, self._folder, None, None
        if process is not None:
            with contextlib.suppress(Exception):
                if process.stdin is not None:
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

    def spawn(
        self, argv: list[str], env: dict, cwd: str, log: str, preload: list[str]
    ) -> ForkedProcess | None:
        """A new kernel launcher process; None when the zygote cannot fork safely any more."""
        request = (
            json.dumps(
                {"argv": argv, "env": env, "cwd": cwd, "log": log, "preload": preload}
            ).encode()
            + b"\n"
        )
        with self._lock:
            for _ in range(2):
                if self._process is None or self._process.poll() is not None:
                    self._start()
                zygote = self._process
                assert zygote is not None and zygote.stdin is not None and zygote.stdout is not None
                try:
                    zygote.stdin.write(request)
                    zygote.stdin.flush()
                    if select.select([zygote.stdout], [], [], 60)[0]:
                        line = zygote.stdout.readline()
                        if line.strip() == b"0":
                            return None
                        if line.strip():
                            return ForkedProcess(int(line))
                except (BrokenPipeError, ValueError, OSError):
                    pass
                zygote.kill()
                self._stop()
        raise KernelDied("the kernel zygote could not start a kernel")


ZYGOTE = Zygote()


class ZygoteProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, except that the kernel process comes from
    :data:`ZYGOTE`, with the modules a released notebook imports (``preload``) already in it."""

    preload = Tuple(help="the modules the zygote imports before it forks this kernel")

    async def launch_kernel(self, cmd: list[str], **kwargs):
        log = kwargs.get("stdout")
        process = ZYGOTE.spawn(
            cmd,
            dict(kwargs.get("env") or {}),
            str(kwargs.get("cwd") or os.getcwd()),
            getattr(log, "name", os.devnull),
            list(self.preload),
        )
        if process is None:
            return await super().launch_kernel(cmd, **kwargs)
        self.process = process  # type: ignore[assignment]  # what it uses of a Popen (ForkedProcess)
        self.pid = self.pgid = process.pid
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
                found += [
                    f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*"
                ]
    return tuple(dict.fromkeys(found))


def zygote_enabled() -> bool:
    return os.environ.get("AUTOGRADER_ZYGOTE", "1") != "0" and hasattr(os, "pidfd_open")

"""The sandbox's side on disk of one student's kernel: its work folder, a private folder (sockets,
connection files, logs, the kernel spec and the launcher), its uid, its cgroups, and the settings
the launcher builds the boundary from. Made before the first kernel starts, removed after the last
ends.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager

from autograder.kernel import isolation, tempdirs
from autograder.kernel.isolation import IsolationMode, Piece, status_pieces
from autograder.kernel.boundary import (
    PACKAGE_DIR,
    CoursePaths,
    boundary_mode,
    copy_launcher,
    import_folders,
    kernel_uid,
    own_uid,
    python_and_system_folders,
    python_environment,
)
from autograder.kernel.limits import Limits

KERNEL_NAME = "autograder-sandbox"


@dataclass
class Workspace:
    workdir: Path  # the kernel's own folder (its HOME and current folder)
    isolation: str  # the isolation status it gets (kernel_boundary.isolation_status)
    limits: Limits
    course: CoursePaths
    data_dir: Path | None = None  # the corpora the notebooks load (None: the course's)
    denied: tuple[Path, ...] = ()  # more folders the kernel must never read
    private: Path | None = None  # set by create(): what only the grader and the launcher use
    uid: int | None = None  # the kernel's own uid (root only), else None
    cgroups: list[str] = field(default_factory=list)

    @property
    def boundary(self) -> bool:
        return boundary_mode(self.isolation)

    @property
    def sockets(self) -> Path:
        assert self.private is not None, "Workspace.create() first"
        return self.private / "sockets"

    def create(self) -> None:
        """The folders, uid, cgroups and kernel spec; in fence mode, ``./data`` linked to
        the course's data."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        private = self.private = tempdirs.make("kernel")
        self.uid = kernel_uid() if own_uid(self.isolation) else None
        # The kernel's uid passes through (never lists) the folders above its own.
        for folder in (private, self.workdir.parent):
            folder.chmod(0o711)
        self.sockets.mkdir(mode=0o700)
        # Memory and processes of the kernel and all its children together (rlimits are
        # per process).
        self.cgroups = (
            isolation.create_kernel_cgroups(
                private.name, self.limits.memory_bytes, self.limits.processes
            )
            if Piece.CGROUP in status_pieces(self.isolation)
            else []
        )
        (private / "root").mkdir()  # where the kernel's own root file system is mounted
        self.give_to_kernel(self.workdir)
        self.give_to_kernel(self.sockets)
        spec_dir = private / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        launcher = copy_launcher(private)
        (spec_dir / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [
                        sys.executable,
                        str(launcher),
                        "-f",
                        "{connection_file}",
                        "--HistoryManager.enabled=False",
                    ],
                    "display_name": "grading sandbox",
                    "language": "python",
                }
            )
        )
        if not self.boundary:
            self._link_course_data()  # in boundary mode the launcher links it inside its own tmpfs

    def specs(self) -> KernelSpecManager:
        assert self.private is not None, "Workspace.create() first"
        return KernelSpecManager(kernel_dirs=[str(self.private / "kernels")])

    def give_to_kernel(self, path: Path | str) -> None:
        """``path`` owned by the kernel's uid, when it has one of its own."""
        if self.uid is not None:
            os.chown(path, self.uid, self.uid)

    def remove(self) -> None:
        if self.uid is not None:  # whatever still runs under the kernel's uid: a session of its own
            isolation.end_processes(uid=self.uid)
        isolation.remove_cgroups(self.cgroups)
        if self.private is not None:
            shutil.rmtree(self.private, ignore_errors=True)

    def _link_course_data(self) -> None:
        """``./data`` in the kernel's folder is the course's data folder (the lab documents), as
        when a student runs a notebook from a clone of the repository."""
        link = self.workdir / "data"
        if not link.exists():
            link.symlink_to(self.course.data, target_is_directory=True)

    def environment(self, connection_file: str) -> dict[str, str]:
        """The kernel's environment, with the launcher's settings in ``AUTOGRADER_SANDBOX``."""
        assert self.private is not None, "Workspace.create() first"
        home = str(self.workdir)
        env = {
            key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL", "TZ") if key in os.environ
        }
        env.update(
            HOME=home,
            MPLBACKEND="Agg",
            MPLCONFIGDIR=str(self.workdir / ".matplotlib"),
            IPYTHONDIR=str(self.workdir / ".ipython"),
            XDG_CACHE_HOME=str(self.workdir / ".cache"),
            TMPDIR=str(self.workdir / "tmp"),
            PYTHONHASHSEED="0",
            OMP_NUM_THREADS="1",
            OPENBLAS_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            JUPYTER_RUNTIME_DIR=str(self.sockets),
            PYTHONDONTWRITEBYTECODE="1",
        )
        course = self.course
        if self.data_dir:
            env[course.data_variable] = str(self.data_dir)
        allowed = [
            self.workdir,
            self.private,
            Path(sys.prefix),
            Path(sys.base_prefix),
            course.data,
            *import_folders(course.private),
        ]
        if self.data_dir:
            allowed.append(self.data_dir)
        env.update(python_environment(course.private))
        settings = isolation.LauncherSettings(
            mode=IsolationMode.BOUNDARY if self.boundary else IsolationMode.FENCE,
            memory_bytes=self.limits.memory_bytes,
            denied=[str(p) for p in (*course.private, PACKAGE_DIR, *self.denied)],
            allowed=[str(p) for p in allowed],
            uid=self.uid,
            gid=self.uid,
        )
        if self.boundary:
            read_only = (
                python_and_system_folders(course.private)
                + [course.data]
                + ([self.data_dir] if self.data_dir else [])
            )
            settings = settings.with_boundary(
                workdir=str(self.workdir),
                sockets_dir=str(self.sockets),
                connection_file=connection_file,
                disk_bytes=self.limits.disk_bytes,
                root_dir=str(self.private / "root"),
                cgroups=self.cgroups,
                links={"data": str(course.data)},
                read_only=[str(p) for p in read_only],
                rlimits=self.limits.rlimits(),
            )
        env[isolation.LauncherSettings.VARIABLE] = settings.encode()
        return env

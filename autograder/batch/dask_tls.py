"""Dask over TLS with client certificates, the one way the kit reaches a cluster: a scheduler
admits only a holder of a certificate that the course's own CA signed (mutual TLS), so nothing
without the key (a student's kernel, another user of the machine) can submit work to a worker.

``bpe-labs dask-certs DIR`` makes the CA and the scheduler's, workers' and client's certificates
and keys in an owner-only folder (:func:`make_certificates`); ``--local-cluster`` starts a
scheduler and workers on this machine with fresh ones (:class:`LocalTLSCluster`).

Our own code over ``cryptography`` (installed with dask): ``Security.temporary()`` makes one
certificate shared by every role and keeps it in memory only, which a ``dask scheduler`` and
``dask worker`` started as programs cannot use.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROLES = ("scheduler", "worker", "client")
CA_FILE = "ca.pem"


class CertificatesExist(ValueError):
    """The folder already holds certificates (never overwritten: workers may be using them)."""


@dataclass(frozen=True)
class CertFolder:
    """The files :func:`make_certificates` writes in ``folder``."""

    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / CA_FILE

    def cert(self, role: str) -> Path:
        return self.folder / f"{role}.pem"

    def key(self, role: str) -> Path:
        return self.folder / f"{role}-key.pem"

    def security(self, role: str = "client"):
        """``distributed.security.Security`` for ``role`` (the grader is the client)."""
        from distributed.security import Security

        return Security(
            tls_ca_file=str(self.ca),
            tls_client_cert=str(self.cert(role)),
            tls_client_key=str(self.key(role)),
            require_encryption=True,
        )

    def tls_arguments(self, role: str) -> list[str]:
        """The ``dask scheduler`` / ``dask worker`` options for ``role``."""
        return [
            "--tls-ca-file", str(self.ca),
            "--tls-cert", str(self.cert(role)),
            "--tls-key", str(self.key(role)),
        ]


def make_certificates(folder: Path, hosts: tuple[str, ...] = (), days: int = 365) -> CertFolder:
    """A CA, and a certificate and key for each of :data:`ROLES`, in ``folder`` (created mode 0700,
    keys 0600, nothing overwritten). ``hosts``: names or addresses the scheduler's certificate
    names besides this machine's (Dask checks the CA's signature, not the name)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder = Path(folder)
    files = CertFolder(folder)
    if folder.exists() and any(
        path.exists() for path in [files.ca, *(files.cert(r) for r in ROLES)]
    ):
        raise CertificatesExist(
            f"{folder} already holds Dask certificates: use them, or name a new folder"
        )
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)

    def name(common: str):
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "bpe-labs grading"),
                          x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def write(path: Path, data: bytes, mode: int) -> None:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)

    def key_pem(key) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name("bpe-labs Dask CA")
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                       critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    names: list[x509.GeneralName] = []
    for host in ("localhost", socket.gethostname(), "127.0.0.1", "::1", *hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder().subject_name(name(f"bpe-labs Dask {role}"))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName(list(dict.fromkeys(names))),
                           critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        write(files.key(role), key_pem(key), 0o600)
        write(files.cert(role), cert.public_bytes(serialization.Encoding.PEM), 0o600)
    write(folder / "ca-key.pem", key_pem(ca_key), 0o600)  # to sign more workers' later
    write(files.ca, ca.public_bytes(serialization.Encoding.PEM), 0o600)
    return files


def dask_program(python: str | None = None) -> list[str]:
    """``dask`` as this interpreter (or ``python``) runs it, whatever PATH says."""
    return [python or sys.executable, "-m", "dask"]


# No HTTP server with pages about the cluster (Dask serves /info, /json and /metrics without
# authentication, on every address by default): the scheduler and workers answer TLS only.
NO_HTTP = {
    "DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES": "[]",
    "DASK_DISTRIBUTED__WORKER__HTTP__ROUTES": "[]",
}


class ClusterDidNotStart(RuntimeError):
    """The local scheduler or its workers did not come up."""


class LocalTLSCluster:
    """A ``dask scheduler`` and ``workers`` ``dask worker`` processes on this machine, on loopback,
    over TLS with certificates made fresh for it in an owner-only folder (or ``certs``), removed at
    the end. Each worker grades one file at a time (one thread); ``worker_env``,
    ``worker_python``: extra environment and the interpreter of each worker (tests: one forced into
    the fence). Every process runs as the user who starts it."""

    def __init__(self, workers: int = 2, worker_env: list[dict] | None = None,
                 start_seconds: float = 120.0, certs: CertFolder | None = None,
                 worker_python: list[str | None] | None = None):
        self.workers = max(0, workers)
        self.worker_env = list(worker_env or [])
        self.worker_python = list(worker_python or [])
        self.start_seconds = start_seconds
        self.folder = Path(tempfile.mkdtemp(prefix="bpe-dask-"))  # 0700
        self.certs = certs or make_certificates(self.folder / "certs")
        self.scheduler: subprocess.Popen | None = None
        self.worker_processes: list[subprocess.Popen] = []
        self.address = ""

    @property
    def security(self):
        return self.certs.security("client")

    def _start(self, argv: list[str], log: str, env: dict | None = None,
               python: str | None = None) -> subprocess.Popen:
        environment = {**os.environ, **NO_HTTP, **(env or {})}
        with open(self.folder / log, "ab") as handle:
            return subprocess.Popen(
                [*_dies_with_this_process(), *dask_program(python), *argv],
                stdin=subprocess.DEVNULL, stdout=handle, stderr=handle, env=environment,
                cwd=self.folder, start_new_session=True,
            )

    def start(self) -> "LocalTLSCluster":
        scheduler_file = self.folder / "scheduler.json"
        self.scheduler = self._start(
            ["scheduler", "--host", "127.0.0.1", "--port", "0", "--protocol", "tls",
             "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
             "--scheduler-file", str(scheduler_file),
             *self.certs.tls_arguments("scheduler")], "scheduler.log")
        deadline = time.monotonic() + self.start_seconds
        while not scheduler_file.exists():
            if self.scheduler.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise ClusterDidNotStart(f"the local Dask scheduler did not start: {self.log()}")
            time.sleep(0.1)
        import json

        while not self.address:
            try:
                self.address = json.loads(scheduler_file.read_text())["address"]
            except (ValueError, KeyError):
                time.sleep(0.1)
        for index in range(self.workers):
            self.add_worker(self.worker_env[index] if index < len(self.worker_env) else None,
                            self.worker_python[index] if index < len(self.worker_python) else None)
        if self.workers:
            self.wait_for_workers(self.workers, deadline - time.monotonic())
        return self

    def add_worker(self, env: dict | None = None, python: str | None = None
                   ) -> subprocess.Popen:
        process = self._start(
            ["worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
             "--dashboard-address", "127.0.0.1:0", "--host", "127.0.0.1",
             "--name", f"local-{len(self.worker_processes)}",
             *self.certs.tls_arguments("worker")],
            f"worker-{len(self.worker_processes)}.log", env, python)
        self.worker_processes.append(process)
        return process

    def wait_for_workers(self, count: int, seconds: float) -> None:
        from distributed import Client

        try:
            with Client(self.address, security=self.security, timeout=max(seconds, 5)) as client:
                client.wait_for_workers(count, timeout=max(seconds, 5))
        except Exception as error:
            self.stop()
            raise ClusterDidNotStart(
                f"the local Dask workers did not join ({type(error).__name__}): {self.log()}"
            ) from None

    def log(self) -> str:
        lines = []
        for path in sorted(self.folder.glob("*.log")):
            lines += path.read_text(errors="replace").splitlines()[-3:]
        return " | ".join(lines)[-600:]

    def stop(self) -> None:
        for process in [*self.worker_processes, *([self.scheduler] if self.scheduler else [])]:
            if process.poll() is None:
                process.terminate()
        for process in [*self.worker_processes, *([self.scheduler] if self.scheduler else [])]:
            try:
                process.wait(3)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        self.worker_processes, self.scheduler = [], None
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> "LocalTLSCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _dies_with_this_process() -> list[str]:
    """``setpriv --pdeathsig KILL --`` where util-linux has it: a grader killed hard leaves no
    scheduler or worker behind (the signal comes when the thread that started them ends: start a
    cluster from a thread that lives as long as it)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return []
    probe = subprocess.run([setpriv, "--pdeathsig", "KILL", "--", "true"], capture_output=True)
    return [setpriv, "--pdeathsig", "KILL", "--"] if probe.returncode == 0 else []

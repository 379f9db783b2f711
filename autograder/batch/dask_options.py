"""The Dask options shared by ``grade`` and ``serve`` (``--scheduler``, ``--tls-*``,
``--local-cluster``, ``--allow-fence``, ``--worker-wait``), and the one way the kit reaches a
scheduler: TLS with a client certificate (:func:`dask_security`)."""
from __future__ import annotations

import argparse
from pathlib import Path


WAIT_SECONDS = 60.0  # how long a batch waits for a worker that can grade (--worker-wait)


class DaskOptionMistake(ValueError):
    """A mistake in the Dask options; the message says what to do instead."""


class InsecureScheduler(DaskOptionMistake):
    """A Dask scheduler without TLS and client certificates (refused wherever it runs)."""


class SchedulerUnreachable(RuntimeError):
    """The Dask scheduler named by ``--scheduler`` could not be reached."""


def dask_security(
    address: str,
    tls_ca: str | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    security=None,
):
    """The ``distributed.security.Security`` to reach ``address`` with: always TLS with a client
    certificate (mutual TLS: the scheduler admits only holders of a certificate its CA signed).

    A scheduler without them is refused wherever it runs, this machine included: anyone who can
    reach one (another user of the machine, a student's kernel) can run code on its workers and
    read the course. ``bpe-labs dask-certs DIR`` makes the certificates (dask_tls.py).
    """
    if security is None and tls_ca and tls_cert:
        from distributed.security import Security

        security = Security(
            tls_ca_file=tls_ca,
            tls_client_cert=tls_cert,
            tls_client_key=tls_key,
            require_encryption=True,
        )
    if security is None and address.startswith("inproc://"):
        return None  # a scheduler inside this very process (tests): no network at all
    if security is None or not address.startswith("tls://"):
        raise InsecureScheduler(
            f"refusing the Dask scheduler {address}: the kit talks to a scheduler only over TLS "
            "with client certificates (anyone who reaches a scheduler can run code on its "
            "workers). Make them with `bpe-labs dask-certs DIR`, start the scheduler and workers "
            "with them (docs/GRADING.md) and pass --scheduler tls://HOST:PORT --tls-dir DIR, or "
            "use --local-cluster"
        )
    return security


def add_dask_arguments(parser: argparse.ArgumentParser) -> None:
    """``--scheduler`` and its TLS options, ``--local-cluster``, ``--allow-fence``,
    ``--worker-wait``: shared by ``grade`` and ``serve``."""
    parser.add_argument(
        "--scheduler",
        help="grade on a Dask cluster: the scheduler's address, tls://HOST:PORT (TLS with client "
        "certificates only: see dask-certs)",
    )
    parser.add_argument(
        "--tls-dir", help="Dask: the folder `dask-certs` wrote (its ca.pem, client.pem and "
        "client-key.pem)")
    parser.add_argument(
        "--tls-ca-file",
        help="Dask: the CA certificate that signed the scheduler's and workers' certificates",
    )
    parser.add_argument(
        "--tls-cert", help="Dask: this client's certificate (the scheduler requires one)"
    )
    parser.add_argument("--tls-key", help="Dask: this client's private key")
    parser.add_argument(
        "--local-cluster", action="store_true",
        help="Dask: start a scheduler and --workers workers on this machine, over TLS with fresh "
        "certificates in an owner-only folder, for this run only")
    parser.add_argument(
        "--allow-fence", action="store_true",
        help="Dask and the service: let a worker whose kernels get only the fence (no Landlock) "
        "grade; its rows say fence (see docs/SECURITY.md)")
    parser.add_argument(
        "--worker-wait", type=float, default=WAIT_SECONDS,
        help="Dask: seconds to wait for a worker that can grade before giving up "
        "(default %(default)g)")


def dask_arguments(args) -> tuple[str | None, object | None]:
    """The scheduler's address and the TLS security that ``add_dask_arguments`` options say;
    raises :class:`InsecureScheduler` for anything but TLS with a certificate, and
    :class:`DaskOptionMistake` for options that contradict each other."""

    if args.local_cluster and args.scheduler:
        raise DaskOptionMistake("--local-cluster starts its own scheduler: leave out --scheduler")
    if not args.scheduler:
        if args.tls_dir or args.tls_ca_file or args.tls_cert:
            raise InsecureScheduler("TLS options were given without --scheduler tls://HOST:PORT")
        return None, None
    ca, cert, key = args.tls_ca_file, args.tls_cert, args.tls_key
    if args.tls_dir:
        from autograder.batch.dask_tls import CertFolder

        files = CertFolder(Path(args.tls_dir))
        ca, cert, key = (ca or str(files.ca), cert or str(files.cert("client")),
                         key or str(files.key("client")))
        for path in (ca, cert, key):
            if not Path(path).is_file():
                raise DaskOptionMistake(
                    f"--tls-dir {args.tls_dir}: {path} is missing (make the folder with "
                    "`bpe-labs dask-certs DIR`)"
                )
    return args.scheduler, dask_security(args.scheduler, ca, cert, key)

"""Is the service's address free? Asked before ``serve`` (and ``make serve``) prints anything: a
busy port once got the whole banner, a one-time password and then ``address already in use``, while
``/health`` answered from the other server.

    python -m autograder.service.port HOST PORT   # exit 0 when free, else one line and exit 2
"""
from __future__ import annotations

import errno
import socket
import sys


def holder(port: int) -> str:
    """What listens on ``port``: ``process 1234 (python -m http.server 8000)``, or why it is not
    known."""
    try:
        import psutil

        for connection in psutil.net_connections(kind="tcp"):
            if connection.status == psutil.CONN_LISTEN and connection.laddr and \
                    connection.laddr.port == port:
                if connection.pid is None:
                    return "a process this user may not see"
                try:
                    command = " ".join(psutil.Process(connection.pid).cmdline())[:120]
                except psutil.Error:
                    command = "?"
                return f"process {connection.pid} ({command})"
    except Exception:  # psutil missing or refused: the port is still busy
        pass
    return "another program"


def port_problem(host: str, port: int) -> str | None:
    """None when ``host:port`` can be listened on, else one line saying what holds it and what to
    do."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            # as uvicorn binds: a port left in TIME_WAIT by an earlier run is free
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            return (f"port {port} on {host} is already in use by {holder(port)}: stop it, or "
                    f"choose another port (make serve PORT={port + 1}, or serve --port {port + 1})")
        return (f"cannot listen on {host}:{port} ({error.strerror}): choose another HOST or PORT "
                "(make serve HOST=127.0.0.1 PORT=8000)")
    return None


def main(argv: list[str] | None = None) -> int:
    host, port = (argv if argv is not None else sys.argv[1:]) or ("127.0.0.1", "8000")
    problem = port_problem(host, int(port))
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the service's tests and ``benchmarks/bench_service.py`` measure of the web process while it
is attacked: its peak resident memory, and how slowly ``/health`` answers meanwhile.

The peak is the kernel's own high-water mark (``VmHWM`` in /proc/PID/status), reset when a
measurement starts (``5`` written to /proc/PID/clear_refs): exact, where sampling the resident
size in a thread misses a spike shorter than its period, and no thread. Where the reset is not
allowed (another user's process), the peak is the one since the process started: never lower."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx

MB = 1024 * 1024


def reset_peak(pid: int) -> bool:
    """Start the process's high-water mark again from its size now; False if not allowed."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss(pid: int) -> int:
    """The process's peak resident memory in bytes (since it started, or since :func:`reset_peak`).
    """
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/{pid}/status has no VmHWM line (not Linux?)")


class WebProcessWatch:
    """Within ``with``: the web process's peak resident memory (``peak``, read when the block
    ends), and, given its ``url``, /health asked every 0.1 s: the slowest answer
    (``slowest_health``, seconds) and how many did not come within ``health_timeout`` seconds
    (``health_failures``)."""

    def __init__(self, pid: int, url: str | None = None, health_timeout: float = 30.0):
        self.pid, self.url, self.health_timeout = pid, url, health_timeout
        self.peak, self.slowest_health, self.health_failures = 0, 0.0, 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._health, daemon=True) if url else None

    def _health(self) -> None:
        while not self.done.is_set():
            started = time.monotonic()
            try:
                httpx.get(f"{self.url}/health", timeout=self.health_timeout)
            except httpx.HTTPError:
                self.health_failures += 1
            self.slowest_health = max(self.slowest_health, time.monotonic() - started)
            time.sleep(0.1)

    def __enter__(self) -> "WebProcessWatch":
        reset_peak(self.pid)
        if self.thread is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join(self.health_timeout + 30)
        self.peak = peak_rss(self.pid)

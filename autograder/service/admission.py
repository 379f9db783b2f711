"""What an upload may cost before anything in it is trusted (docs/SERVICE.md, "What an upload may
cost").

Checked before a byte of the notebook is parsed, per student and overall:

- one upload of a student's at a time is read and checked (a second at once: 429 ``busy``);
- one upload larger than ``LARGE`` at a time is parsed by the whole web process (more wait their
  turn, their bodies on disk, not in memory);
- a refused upload (not a notebook, not a lab, late, one at a time) counts against the student's
  rate like an accepted one: once a student's refusals alone reach the rate, every upload of theirs
  is refused before its body is parsed (the route drains it unread), until the window moves on;
  so is one of a student whose grading time for the hour is used.

Then the parse itself is bounded by :func:`parse_cost`: what the file's JSON would cost as Python
objects, estimated from counts of its structural bytes (C speed, no parse). A file whose estimate
passes ``COST_FACTOR`` times its size (plus ``COST_ALLOWANCE``) is refused without being parsed: a
notebook's JSON is mostly long strings, a file of millions of empty lists or one-character strings
is not a notebook. The file is counted in 1 MB blocks, never held whole. The counts are my own few
lines: a streaming JSON parser (ijson) would bound depth but not what the finished objects cost.

The refusals are kept in this process's memory (a restart forgets them: the accepted submissions,
which are rows, are never forgotten).
"""
from __future__ import annotations

import asyncio
import math
import threading
from collections import defaultdict, deque
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import AsyncIterator

from autograder.service.settings import now

# what one JSON value costs as a Python object, at most, in bytes (CPython 3.11, 64-bit): a list or
# a dict with its pointer in its parent and its first slots, a str object, a number or a literal
COST_CONTAINER, COST_STRING, COST_ITEM = 120, 64, 40
COST_FACTOR = 6  # the course's notebooks cost at most 5 times their size (tests/service)
COST_ALLOWANCE = 16 * 1024 * 1024
LARGE = 1024 * 1024  # a file larger than this is parsed alone: one at a time in the web process


def parse_cost(raw: bytes) -> int:
    """An upper bound, in bytes, of what ``json.loads(raw)`` builds (then nbformat builds it again):
    every ``[``/``{`` a container, every pair of quotes a string, every comma or colon an item,
    counted wherever they are (inside strings too: a generous bound, never a low one).

    >>> parse_cost(b'{"cells": []}') < 1000
    True
    >>> parse_cost(b"[" * 1000 + b"]" * 1000) // 1000
    120
    """
    return (
        COST_CONTAINER * (raw.count(b"[") + raw.count(b"{"))
        + COST_STRING * ((raw.count(b'"') + 1) // 2)
        + COST_ITEM * (raw.count(b",") + raw.count(b":"))
    )


def too_costly(raw: bytes) -> str | None:
    """Why ``raw`` is refused before it is parsed, or None."""
    over = parse_cost(raw) > COST_FACTOR * len(raw) + COST_ALLOWANCE
    return too_costly_message() if over else None


def too_costly_message() -> str:
    return (
        "the file is not a notebook: its JSON is made of millions of tiny pieces (lists, objects, "
        "short strings), not of cells; save the notebook from Jupyter, Colab or VS Code and submit "
        "that file"
    )


class Admission:
    """The per-student and overall limits on uploads of one web process."""

    def __init__(self, rate_limit: int, rate_window: float):
        self.rate_limit, self.window = rate_limit, rate_window
        self.reading: set[str] = set()
        self.large = asyncio.Lock()
        self.refusals: dict[str, deque[datetime]] = defaultdict(deque)
        self.lock = threading.Lock()

    def refused_times(self, student_id: str) -> list[datetime]:
        """When (naive UTC) the student's uploads were refused, within the rate's window."""
        with self.lock:
            times = self.refusals.get(student_id)
            if times is None:
                return []
            since = now() - timedelta(seconds=self.window)
            while times and times[0] <= since:
                times.popleft()
            if not times:
                del self.refusals[student_id]
            return list(times)

    def refused(self, student_id: str) -> None:
        """Count a refused upload of the student's against their rate."""
        if self.rate_limit:
            with self.lock:
                self.refusals[student_id].append(now())

    def over_rate(self, student_id: str) -> tuple[int, datetime, int] | None:
        """(refusals, when the next upload is allowed, in how many seconds) if the student's
        refusals alone are at the rate, else None."""
        if not self.rate_limit:
            return None
        times = self.refused_times(student_id)
        if len(times) < self.rate_limit:
            return None
        allowed = times[len(times) - self.rate_limit] + timedelta(seconds=self.window)
        return len(times), allowed, max(1, math.ceil((allowed - now()).total_seconds()))

    @asynccontextmanager
    async def turn(self, student_id: str, size: int) -> AsyncIterator[None]:
        """The student's one upload (of ``size`` bytes) being read and checked, in its turn among
        everyone's; raises :class:`Busy` if the student has one being read already."""
        with self.lock:
            if student_id in self.reading:
                raise Busy()
            self.reading.add(student_id)
        try:
            if size > LARGE:
                async with self.large:
                    yield
            else:
                yield
        finally:
            with self.lock:
                self.reading.discard(student_id)


class Busy(Exception):
    """The student has an upload being read and checked already."""


def file_too_costly(path: Path, block: int = 1 << 20) -> str | None:
    """:func:`too_costly` for a file, read in blocks (a large file is never held whole: freed
    blocks of many MB would stay in the allocator's arenas, one per thread)."""
    cost = size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(block):
            size += len(chunk)
            # a '"' pair split across blocks is counted as two halves rounded up: never too low
            cost += parse_cost(chunk)
    return too_costly_message() if cost > COST_FACTOR * size + COST_ALLOWANCE else None

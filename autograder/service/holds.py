"""Refusals answered slowly: a client told to wait (429 with ``Retry-After``) that sends again at
once is made to wait by the server, at no cost to it (docs/SERVICE.md, *What a refusal costs*).

The refusals held are those that need no parse and are answered from memory: a sign-in form past
its limits (signin_limits.py), an upload past the student's rate of refusals or grading budget
(admission.py). Holding the answer costs the web process an idle coroutine; an upload's body waits
unread in the socket's buffers, so the sender stops sending. A guesser or a script that sends again
as soon as it is answered is slowed to one request per hold; a student or a browser that reads the
answer waits as ``Retry-After`` says anyway.

What is held is bounded: at most ``HELD_PER_STUDENT`` uploads at once per student (each holds up
to a socket's buffers of unread body in the kernel), ``HELD_PER_ADDRESS`` sign-ins per address (a
campus behind one address), and ``in_all`` in all. Past any, the answer goes at once and closes
its connection (a client that opens many connections at once is a proxy's to limit:
docs/SERVICE.md).

    >>> import asyncio
    >>> holds = Holds(seconds=0.01)
    >>> async def two_at_once():
    ...     one, two = holds.hold("s001", 60, most=1), holds.hold("s001", 60, most=1)
    ...     return await asyncio.gather(one, two)
    >>> asyncio.run(two_at_once())
    [True, False]
    >>> holds.held
    {}
"""
from __future__ import annotations

import asyncio

HOLD_SECONDS = 3.0  # serve --hold-refusals
HELD_PER_STUDENT = 4
HELD_PER_ADDRESS = 64
HELD_IN_ALL = 512


class Holds:
    """The refusals this web process is holding, per key (``student:ID``, ``address:IP``)."""

    def __init__(self, seconds: float = HOLD_SECONDS, in_all: int = HELD_IN_ALL):
        self.seconds, self.in_all = seconds, in_all
        self.held: dict[str, int] = {}
        self.total = 0

    async def hold(self, key: str, retry_after: float, most: int) -> bool:
        """Wait ``min(retry_after, seconds)`` before a refusal is answered. False, at once, when
        ``key`` already has ``most`` answers held, or the process ``in_all``: answer and close the
        connection.
        (Only the event loop's thread calls this: no lock.)"""
        wait = min(float(retry_after), self.seconds)
        if wait <= 0:
            return True
        if self.held.get(key, 0) >= most or self.total >= self.in_all:
            return False
        self.held[key] = self.held.get(key, 0) + 1
        self.total += 1
        try:
            await asyncio.sleep(wait)
        finally:
            self.total -= 1
            self.held[key] -= 1
            if not self.held[key]:
                del self.held[key]
        return True

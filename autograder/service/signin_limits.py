"""How many failed sign-ins are allowed, per account and per address, before the sign-in forms
answer 429 with ``Retry-After`` (docs/SERVICE.md, *Sign-in*). The windows grow (a minute, an hour, a
day), so a guesser backs off further with every tier it fills; a right password or token never
counts. A refused attempt is refused before any password is hashed: guessing costs the server no
scrypt. The counts live in this web process (the ``limits`` library's moving windows in memory):
a restart forgets them.

    >>> limits = SignInLimits(account=("2/minute",), address=("3/minute",))
    >>> limits.wait(account="prof", address="10.0.0.1")
    0
    >>> for _ in range(2):
    ...     limits.failed(account="prof", address="10.0.0.1")
    >>> 0 < limits.wait(account="prof", address="10.0.0.1") <= 60
    True
    >>> limits.wait(account="ta", address="10.0.0.2")
    0
"""
from __future__ import annotations

import math
import time

from limits import RateLimitItem, parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

ACCOUNT_LIMITS = ("5/minute", "20/hour", "100/day")
ADDRESS_LIMITS = ("20/minute", "100/hour", "500/day")


class SignInLimits:
    def __init__(
        self, account: tuple[str, ...] = ACCOUNT_LIMITS, address: tuple[str, ...] = ADDRESS_LIMITS
    ):
        self.limiter = MovingWindowRateLimiter(MemoryStorage())
        self.account = [parse(limit) for limit in account]
        self.address = [parse(limit) for limit in address]

    def _keys(self, account: str | None, address: str | None) -> list[tuple[RateLimitItem, str]]:
        keys = [(item, f"address:{address}") for item in self.address] if address else []
        if account:
            keys += [(item, f"account:{account[:100]}") for item in self.account]
        return keys

    def wait(self, account: str | None = None, address: str | None = None) -> int:
        """Seconds until one more attempt is allowed: 0 now."""
        longest = 0.0
        for item, key in self._keys(account, address):
            if not self.limiter.test(item, "signin", key):
                reset = self.limiter.get_window_stats(item, "signin", key).reset_time
                longest = max(longest, reset - time.time(), 1)
        return math.ceil(longest)

    def failed(self, account: str | None = None, address: str | None = None) -> None:
        """Count a wrong password or token against the account and the address."""
        for item, key in self._keys(account, address):
            self.limiter.hit(item, "signin", key)

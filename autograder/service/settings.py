"""ServiceSettings: everything the service is told at start, in one object (the command line fills
it).

Times are kept as naive UTC datetimes (what the database stores); a deadline written without a
UTC offset is read in the server's local time zone.

    >>> parse_deadline("toy_bpe=2026-12-01T23:59:00+01:00")
    ('toy_bpe', Deadline(due=datetime.datetime(2026, 12, 1, 22, 59), late='mark'))
    >>> parse_deadline("toy_bpe=2026-12-01T23:59:00Z", late="refuse")[1].late
    'refuse'
    >>> parse_rate("10/hour"), parse_rate("3/90s"), parse_rate("0")
    ((10, 3600.0), (3, 90.0), (0, 3600.0))
"""
from __future__ import annotations

import csv
import ipaddress
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from autograder.grading.settings import Settings

LATE_POLICIES = ("mark", "refuse")
# How an LTI launch's user is found on the roster (docs/LTI.md): the launch's email and the roster's
# email column; the LMS's SIS id (lis person_sourcedid), its LTI user id ("sub") or a custom
# parameter
# student_id and the roster's student_id.
LTI_IDENTITIES = ("email", "sourcedid", "sub", "custom")
COUNTED = ("last", "best")
MiB = 1024 * 1024


@dataclass(frozen=True)
class Deadline:
    due: datetime  # naive UTC
    late: str = "mark"  # mark: accepted and marked late; refuse: not accepted


@dataclass(frozen=True)
class ServiceSettings:
    db_url: str
    roster: Path | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    insecure: bool = False  # plain HTTP on an address other than loopback
    https_cert: Path | None = None  # TLS served by uvicorn itself (else: a reverse proxy in front)
    https_key: Path | None = None
    forwarded_allow_ips: str = "127.0.0.1"  # proxies whose X-Forwarded-* headers are believed
    max_upload_bytes: int = 20 * MiB
    rate_limit: int = 10  # submissions per student per lab per window; 0: no limit
    rate_window: float = 3600.0
    # seconds of grading a student's own notebooks may use per hour (queue.USAGE_WINDOW); 0: none
    grading_budget: float = 20 * 60.0
    # a local job graded this long no longer holds a slot (grader.LocalRunner)
    long_job_seconds: float = 60.0
    # seconds a refusal answered from memory is held before it is sent (holds.py); 0: none
    hold_refusals: float = 3.0
    deadlines: dict[str, Deadline] = field(default_factory=dict)
    counted: str = "last"  # the attempt that counts: the last graded, or the best
    workers: int = 2  # local grading processes (serve --workers: limits.default_workers())
    scheduler: str | None = None  # a Dask scheduler instead of local processes
    # distributed.security.Security, see autograder.batch.dask_options.dask_security
    dask_security: object | None = None
    local_cluster: bool = False  # serve --local-cluster: a TLS scheduler and workers of its own
    allow_fence: bool = False  # let workers whose kernels get only the fence grade
    grading: Settings = field(default_factory=Settings)
    session_hours: float = 12.0
    # how often an idle grading process looks at the queue (it is also woken)
    poll_seconds: float = 0.25
    log_level: str = "info"
    # LTI 1.3: the platforms this service is registered with (pylti1p3's JSON)
    lti_config: Path | None = None
    lti_identity: str = "email"  # how a launch's user is found on the roster, one of LTI_IDENTITIES
    # The address students' browsers and the LMS reach (https://grader.example.edu): every link the
    # service hands to someone else is built from it, never from a request's Host header.
    public_url: str | None = None
    api_docs: bool = False  # serve /docs and /redoc (their scripts come from a CDN: off by default)

    def __post_init__(self):
        if self.lti_identity not in LTI_IDENTITIES:
            raise ValueError(
                f"an LTI user is found by {', '.join(LTI_IDENTITIES)}, not {self.lti_identity!r}"
            )
        if self.counted not in COUNTED:
            raise ValueError(
                f"the counted attempt is one of {', '.join(COUNTED)}, not {self.counted!r}"
            )
        for lab, deadline in self.deadlines.items():
            if deadline.late not in LATE_POLICIES:
                raise ValueError(
                    f"{lab}: a late submission is {' or '.join(LATE_POLICIES)}d, not "
                    f"{deadline.late!r}"
                )

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @property
    def tls(self) -> bool:
        return bool(self.https_cert and self.https_key)


def is_loopback(host: str) -> bool:
    """Does ``host`` name only this machine?

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("localhost")
    (True, True, True)
    >>> is_loopback("0.0.0.0")
    False
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def utc(moment: datetime) -> datetime:
    """``moment`` as naive UTC (a naive one is taken as local time)."""
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def parse_deadline(text: str, late: str = "mark") -> tuple[str, Deadline]:
    """``LAB=WHEN`` (ISO 8601, e.g. ``2026-12-01T23:59+01:00``) as (lab, Deadline)."""
    lab, separator, when = text.partition("=")
    if not separator or not lab.strip() or not when.strip():
        raise ValueError(f"{text!r}: a deadline is LAB=WHEN, e.g. toy_bpe=2026-12-01T23:59+01:00")
    try:
        due = datetime.fromisoformat(when.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r}: {when.strip()!r} is not an ISO 8601 date and time, e.g. "
            "2026-12-01T23:59+01:00"
        ) from None
    return lab.strip(), Deadline(utc(due), late)


def read_deadlines(path: Path, late: str = "mark") -> dict[str, Deadline]:
    """A CSV with columns ``lab,deadline`` and optionally ``late`` (mark or refuse)."""
    deadlines = {}
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames or not {"lab", "deadline"} <= set(reader.fieldnames):
            raise ValueError(
                f"{path}: the deadlines file needs a header with the columns lab,deadline (and "
                "optionally late)"
            )
        for line, row in enumerate(reader, start=2):
            policy = (row.get("late") or late).strip()
            if policy not in LATE_POLICIES:
                raise ValueError(
                    f"{path}, line {line}: late is {' or '.join(LATE_POLICIES)}, not {policy!r}"
                )
            try:
                lab, deadline = parse_deadline(f"{row['lab']}={row['deadline']}", policy)
            except ValueError as error:
                raise ValueError(f"{path}, line {line}: {error}") from None
            deadlines[lab] = deadline
    return deadlines


_UNITS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}


def parse_rate(text: str) -> tuple[int, float]:
    """``N/WINDOW`` (``10/hour``, ``3/90s``, ``20/2h``) as (N, seconds); ``0``: no limit."""
    count, _, window = text.partition("/")
    match = re.fullmatch(r"\s*(\d*\.?\d*)\s*([a-z]*)\s*", window or "hour")
    unit = match.group(2) or "hour" if match else ""
    if unit not in _UNITS and unit.endswith("s"):
        unit = unit[:-1]  # hours, mins
    if not count.strip().isdigit() or not match or unit not in _UNITS:
        raise ValueError(f"{text!r}: a rate is N/WINDOW, e.g. 10/hour, 3/90s, 20/2h (0: no limit)")
    return int(count), float(match.group(1) or 1) * _UNITS[unit]

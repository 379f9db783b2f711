"""Who is calling: a :class:`Principal` (a student, an instructor or a TA), found by pluggable
authenticators, and the web sessions and CSRF tokens of the pages.

The API authenticates with ``Authorization: Bearer TOKEN`` only (no cookie: a page of another site
cannot make a browser call it). Pages authenticate with a session cookie (``Secure``, ``HttpOnly``,
``SameSite=Lax``); a session is started by signing in with a token (students) or a password
(instructors, TAs), and by any other sign-in the service is given: an LTI 1.3 launch (lti/routes.py)
verifies its signed message, finds the roster entry and calls :func:`start_session` with
``via="lti"``. Every form that changes something carries the session's CSRF token; the sign-in
forms, before a session exists, a double-submit cookie's. A form whose ``Origin`` is another site is
refused too.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable
from urllib.parse import urlsplit

from sqlalchemy import delete

from autograder.service import tokens
from autograder.service.database import Database
from autograder.service.models import Account, Student, WebSession
from autograder.service.settings import now

SESSION_COOKIE = "autograder_session"
CSRF_COOKIE = "autograder_csrf"
STUDENT = "student"


@dataclass(frozen=True)
class Principal:
    kind: str  # student | instructor | ta
    id: str  # the student id or the account's user name
    via: str  # token | password | lti
    csrf: str | None = None  # the web session's CSRF token
    name: str = ""

    @property
    def student(self) -> bool:
        return self.kind == STUDENT


# An authenticator reads a request and returns who it is from, or None.
Authenticator = Callable[[object, Database], "Principal | None"]


def bearer_token(request, db: Database) -> Principal | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    with db.reading() as session:
        student = tokens.student_of(session, token.strip())
        return (
            Principal(STUDENT, student.student_id, "token", name=student.name) if student else None
        )


def session_cookie(request, db: Database) -> Principal | None:
    value = request.cookies.get(SESSION_COOKIE)
    if not value or len(value) > 200:
        return None
    with db.reading() as session:
        row = session.get(WebSession, _digest(value))
        if row is None or row.expires_at < now():
            return None
        if row.student_id is not None:
            student = session.get(Student, row.student_id)
            if student is None or not student.on_roster:
                return None
            if row.via == "token" and not _token_still_valid(session, row):
                return None
            return Principal(STUDENT, student.student_id, row.via, row.csrf, student.name)
        account = session.get(Account, row.username)
        if account is None or account.disabled:
            return None
        return Principal(account.role, account.username, row.via, row.csrf)


def _token_still_valid(session, row: WebSession) -> bool:
    """A session opened with a token lasts only while that token does: revoking or re-issuing it
    (``tokens --revoke``, ``--reissue``) ends the session at its next request."""
    token = tokens.active_token(session, row.student_id) if row.student_id else None
    return token is not None and token.created_at <= row.created_at


def identify(request, db: Database, authenticators: list[Authenticator]) -> Principal | None:
    for authenticate in authenticators:
        principal = authenticate(request, db)
        if principal is not None:
            return principal
    return None


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def start_session(
    db: Database, via: str, hours: float, student_id: str | None = None, username: str | None = None
) -> str:
    """A new web session for a student or an account; returns the cookie's value (only its hash is
    stored)."""
    value = secrets.token_urlsafe(32)
    with db.writing() as session:
        session.execute(delete(WebSession).where(WebSession.expires_at < now()))
        session.add(
            WebSession(
                digest=_digest(value),
                student_id=student_id,
                username=username,
                via=via,
                csrf=secrets.token_urlsafe(24),
                created_at=now(),
                expires_at=now() + timedelta(hours=hours),
            )
        )
    return value


def end_session(db: Database, value: str | None) -> None:
    if value:
        with db.writing() as session:
            session.execute(delete(WebSession).where(WebSession.digest == _digest(value)))


def set_cookie(
    response, name: str, value: str, max_age: int | None, same_site: str = "lax"
) -> None:
    response.set_cookie(
        name, value, max_age=max_age, path="/", secure=True, httponly=True, samesite=same_site
    )


def anonymous_csrf(request) -> str:
    """The double-submit token of a sign-in form: the CSRF cookie's value, or a new one."""
    value = request.cookies.get(CSRF_COOKIE, "")
    return value if 20 <= len(value) <= 100 else secrets.token_urlsafe(24)


def same_origin(request) -> bool:
    """False if the request says it comes from a page of another site (``Origin``, else
    ``Referer``)."""
    source = request.headers.get("origin") or request.headers.get("referer")
    if not source or source == "null":
        return source != "null"
    return urlsplit(source).netloc.lower() == (request.headers.get("host") or "").lower()


def csrf_ok(request, submitted: object, principal: Principal | None) -> bool:
    """Is this form the service's own? Its token matches the session's (or, signed out, the CSRF
    cookie's), and its origin, if said, is this site. ``submitted``: the form's field as it came
    (a string, or a file or nothing in a forged form)."""
    if not same_origin(request) or not submitted:
        return False
    expected = (
        principal.csrf
        if principal is not None and principal.csrf
        else request.cookies.get(CSRF_COOKIE, "")
    )
    return bool(expected) and hmac.compare_digest(str(submitted).encode(), str(expected).encode())

"""Who may use the service: the roster's students with their personal tokens, and the instructors'
and TAs' accounts.

A token is ``<selector>.<secret>`` (random, 8 + 32 URL-safe characters). The database keeps the
selector, to find the row, and the SHA-256 of the whole token, compared with ``hmac.compare_digest``
(constant time); the token itself is written once, to the instructor's ``tokens.csv``. A password is
kept as its scrypt hash (standard library: ``hashlib.scrypt``).

    >>> token = new_token()
    >>> len(token), token.count(".")
    (41, 1)
    >>> stored = hash_password("correct horse")
    >>> check_password("correct horse", stored), check_password("wrong", stored)
    (True, False)
"""
from __future__ import annotations

import base64
import csv
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import delete, select, update

from autograder.grading.identity import read_roster  # noqa: F401  (the roster's format is grade --roster's)
from autograder.service.models import INSTRUCTOR, ROLES, Account, Student, Token, WebSession
from autograder.service.settings import now


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_token() -> str:
    return f"{secrets.token_urlsafe(6)}.{secrets.token_urlsafe(24)}"


@dataclass(frozen=True)
class RosterRow:
    student_id: str
    name: str = ""
    email: str = ""


def roster_rows(path: Path) -> list[RosterRow]:
    """The students of a roster CSV (``grade --roster``'s format: a ``student_id`` column, and any
    of ``user_id``, ``name``, ``login``, ``email``). Raises ``ValueError`` saying what is wrong."""
    # the same checks as grade --roster (header, empty ids, a user id given twice)
    read_roster(Path(path))
    rows: dict[str, RosterRow] = {}
    with open(path, newline="", encoding="utf-8-sig") as handle:
        for row in csv.DictReader(handle):
            student = (row.get("student_id") or "").strip()
            if len(student) > 200:
                raise ValueError(
                    f"{path}: the student id {student[:40]!r}... is longer than 200 characters"
                )
            rows[student] = RosterRow(
                student, (row.get("name") or "").strip(), (row.get("email") or "").strip()
            )
    return list(rows.values())


def new_student(row: RosterRow) -> Student:
    """A student the roster (a CSV, or the LMS's members) adds, on the roster from now on."""
    return Student(
        student_id=row.student_id, name=row.name, email=row.email, on_roster=True, added_at=now()
    )


def load_roster(session, rows: list[RosterRow]) -> tuple[int, int]:
    """Make the database's roster ``rows``: new students added, known ones updated, the others
    marked as off the roster (they keep their submissions, and can no longer submit).
    Returns (students on the roster, of whom new)."""
    known = {student.student_id: student for student in session.scalars(select(Student))}
    added = 0
    for row in rows:
        student = known.get(row.student_id)
        if student is None:
            session.add(new_student(row))
            added += 1
        else:
            student.name, student.email, student.on_roster = row.name, row.email, True
    listed = {row.student_id for row in rows}
    for student_id, student in known.items():
        if student_id not in listed:
            student.on_roster = False
    return len(rows), added


def active_token(session, student_id: str) -> Token | None:
    return session.scalars(
        select(Token).where(Token.student_id == student_id, Token.revoked_at.is_(None))
    ).first()


def ever_issued(session, student_id: str) -> bool:
    return (
        session.scalars(select(Token.id).where(Token.student_id == student_id)).first() is not None
    )


def revoke(session, student_id: str) -> int:
    """Revoke every token of the student, and end the web sessions signed in with one (auth.py
    refuses them anyway); returns how many tokens were active."""
    revoked = session.execute(
        update(Token)
        .where(Token.student_id == student_id, Token.revoked_at.is_(None))
        .values(revoked_at=now())
    ).rowcount
    session.execute(
        delete(WebSession).where(WebSession.student_id == student_id, WebSession.via == "token")
    )
    return revoked


def issue(session, student_id: str) -> str:
    """A new token for the student (any earlier one is revoked); returns it (it is not stored)."""
    revoke(session, student_id)
    token = new_token()
    selector = token.split(".", 1)[0]
    session.add(
        Token(student_id=student_id, selector=selector, digest=digest(token), created_at=now())
    )
    return token


def student_of(session, token: str) -> Student | None:
    """The student on the roster whose active token this is, else None."""
    selector, dot, _ = (token or "").partition(".")
    if not dot or not selector or len(token) > 200:
        hmac.compare_digest(digest(token or ""), digest(""))  # the same work for a malformed token
        return None
    row = session.scalars(select(Token).where(Token.selector == selector)).first()
    expected = row.digest if row is not None else digest(secrets.token_hex(16))
    if (
        not hmac.compare_digest(digest(token), expected)
        or row is None
        or row.revoked_at is not None
    ):
        return None
    student = session.get(Student, row.student_id)
    return student if student is not None and student.on_roster else None


# -- accounts -------------------------------------------------------------------------------------

_SCRYPT = {"n": 2**14, "r": 8, "p": 1}


def hash_password(password: str) -> str:
    salt = os.urandom(16)
    key = hashlib.scrypt(password.encode("utf-8"), salt=salt, dklen=32, **_SCRYPT)
    return (
        "scrypt${n}${r}${p}$".format(**_SCRYPT)
        + f"{base64.b64encode(salt).decode()}${base64.b64encode(key).decode()}"
    )


def check_password(password: str, stored: str) -> bool:
    try:
        _, n, r, p, salt, key = stored.split("$")
        found = hashlib.scrypt(
            password.encode("utf-8"),
            salt=base64.b64decode(salt),
            dklen=32,
            n=int(n),
            r=int(r),
            p=int(p),
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(found, base64.b64decode(key))


_DUMMY_HASH = hash_password(secrets.token_hex(8))


def account_of(session, username: str, password: str) -> Account | None:
    """The enabled account with this name and password, else None (the same work either way)."""
    account = session.get(Account, username) if username else None
    valid = check_password(password, account.password if account is not None else _DUMMY_HASH)
    return account if valid and account is not None and not account.disabled else None


def password_weakness(password: str, username: str = "") -> str | None:
    """Why a staff password is refused, or None. At least 10 characters, and not guessable:
    zxcvbn (Dropbox's estimator, with its lists of common passwords, names and words, keyboard
    rows and repeats) must rate it 3 of 4 or better, "safely unguessable" with a slow hash.

    >>> password_weakness("password12")[:68]
    'this password is too easy to guess (This is a very common password.)'
    >>> password_weakness("aaaaaaaaaa")[:40]
    'this password is too easy to guess (Repe'
    >>> password_weakness("short")
    'a password has at least 10 characters'
    >>> password_weakness("correct horse battery staple") is None
    True
    """
    from zxcvbn import zxcvbn

    if len(password) < 10:
        return "a password has at least 10 characters"
    # zxcvbn's time grows with the length: past 100 characters, length alone is enough
    rating = zxcvbn(password[:100], user_inputs=[username, "bpe", "labs", "grader", "autograder"])
    if rating["score"] >= 3:
        return None
    warning = rating["feedback"].get("warning") or ""
    return (
        "this password is too easy to guess" + (f" ({warning})" if warning else "")
        + ": choose a longer one, a few unrelated words for instance"
    )


def set_account(session, username: str, role: str, password: str) -> Account:
    if role not in ROLES:
        raise ValueError(f"a role is {' or '.join(ROLES)}, not {role!r}")
    if (
        not username
        or len(username) > 100
        or not username.isprintable()
        or username != username.strip()
    ):
        raise ValueError(
            f"{username!r} is not a user name (1 to 100 printable characters, no leading or "
            "trailing space)"
        )
    weak = password_weakness(password, username)
    if weak:
        raise ValueError(weak)
    account = session.get(Account, username)
    if account is None:
        account = Account(
            username=username,
            role=role,
            password=hash_password(password),
            created_at=now(),
            disabled=False,
        )
        session.add(account)
    else:
        account.role, account.password, account.disabled = role, hash_password(password), False
    return account


__all__ = [
    "INSTRUCTOR",
    "issue",
    "revoke",
    "student_of",
    "account_of",
    "set_account",
    "load_roster",
    "roster_rows",
]

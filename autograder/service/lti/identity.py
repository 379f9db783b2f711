"""Who an LTI user is on the roster, and the roster from the LMS's course members (NRPS).

The LMS names the user in the signed launch; ``serve --lti-identity`` says which of its claims
matches the roster:

- ``email`` (default): the launch's ``email`` and the roster's ``email`` column (case-insensitive);
- ``sourcedid``: the LMS's SIS id (the ``lis`` claim's ``person_sourcedid``) and ``student_id``;
- ``sub``: the LMS's LTI user id and ``student_id``;
- ``custom``: a custom parameter ``student_id`` (an LMS substitution such as Canvas's
  ``$Canvas.user.sisIntegrationId`` or Moodle's ``$User.username``) and ``student_id``.

    >>> claims = {"sub": "u-17", "email": "Ada@Example.edu",
    ...           "https://purl.imsglobal.org/spec/lti/claim/lis": {"person_sourcedid": "s017"},
    ...           "https://purl.imsglobal.org/spec/lti/claim/custom": {"student_id": "ada"}}
    >>> [launch_identity(claims, way) for way in ("email", "sourcedid", "sub", "custom")]
    ['ada@example.edu', 's017', 'u-17', 'ada']
    >>> member = {"user_id": "u-17", "email": "ada@example.edu", "name": "Ada",
    ...           "lis_person_sourcedid": "s017",
    ...           "roles": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"]}
    >>> roster_row(member, "email")
    RosterRow(student_id='s017', name='Ada', email='ada@example.edu')
    >>> roster_row({**member, "roles": ["Instructor"]}, "email") is None   # only learners
    True
"""
from __future__ import annotations

import typing as t

from sqlalchemy import func, select

from autograder.service.models import Student
from autograder.service.tokens import RosterRow, new_student

LIS = "https://purl.imsglobal.org/spec/lti/claim/lis"
CUSTOM = "https://purl.imsglobal.org/spec/lti/claim/custom"
LEARNER = "Learner"  # membership#Learner, or the short name NRPS may use
CLAIM_NAMES = {"email": "email", "sourcedid": "lis person_sourcedid", "sub": "LTI user id (sub)",
               "custom": "custom parameter student_id"}


def launch_identity(claims: t.Mapping[str, t.Any], way: str) -> str | None:
    """What the launch says of its user that the roster is matched on, or None if it says
    nothing."""
    if way == "email":
        value = claims.get("email")
        return str(value).strip().lower() if value else None
    if way == "sourcedid":
        value = (claims.get(LIS) or {}).get("person_sourcedid")
    elif way == "sub":
        value = claims.get("sub")
    else:
        value = (claims.get(CUSTOM) or {}).get("student_id")
    return str(value).strip() if value not in (None, "") else None


def find_student(session, value: str, way: str) -> Student | None:
    """The roster entry (on the roster now) that ``value`` names."""
    query = select(Student).where(Student.on_roster.is_(True))
    if way == "email":
        matches = list(session.scalars(query.where(func.lower(Student.email) == value.lower())))
        return matches[0] if len(matches) == 1 else None  # two students with one email: neither
    return session.scalars(query.where(Student.student_id == value)).first()


def is_learner(roles: t.Iterable[str]) -> bool:
    return any(str(role).rsplit("#", 1)[-1].rsplit("/", 1)[-1] == LEARNER for role in roles or ())


def roster_row(member: t.Mapping[str, t.Any], way: str) -> RosterRow | None:
    """A course member (NRPS) as a roster row, or None if they are not an active learner or give
    nothing to be found by. The student id: the SIS id if the LMS shares it, else (matching by
    email) the email, else the LTI user id."""
    if not is_learner(member.get("roles", ())) or member.get("status", "Active") != "Active":
        return None
    email = str(member.get("email") or "").strip().lower()
    sourcedid = str(member.get("lis_person_sourcedid") or "").strip()
    user_id = str(member.get("user_id") or "").strip()
    student_id = (
        {"sourcedid": sourcedid, "sub": user_id}.get(way)
        if way != "email"
        else (sourcedid or email or user_id)
    )
    if not student_id or (way == "email" and not email):
        return None
    name = str(
        member.get("name")
        or " ".join(filter(None, (member.get("given_name"), member.get("family_name"))))
        or ""
    )
    return RosterRow(student_id[:200], name.strip(), email)


def merge_roster(session, rows: list[RosterRow], way: str) -> tuple[int, int]:
    """Add the LMS's learners to the roster, or update the ones it has (matched as a launch would
    be: by email, else by student id); nobody is dropped. Returns (added, updated)."""
    added = updated = 0
    for row in rows:
        student = find_student(session, row.email, "email") if way == "email" else None
        student = student or session.get(Student, row.student_id)
        if student is None:
            session.add(new_student(row))
            added += 1
        else:
            student.name, student.on_roster = row.name or student.name, True
            student.email = row.email or student.email
            updated += 1
        session.flush()
    return added, updated

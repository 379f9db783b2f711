"""Small parts of the LTI tool on synthetic data (the end-to-end tests are in test_service_lti.py):
how a launch's user is found on the roster, the score's comment, the configuration's checks."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from autograder.service.database import Database
from autograder.service.lti.identity import find_student, launch_identity, merge_roster, roster_row
from autograder.service.lti.scores import score_of
from autograder.service.lti.tool import ConfigError, load, write_keys
from autograder.service.models import LtiLink, Student, Submission
from autograder.service.settings import now

LIS = "https://purl.imsglobal.org/spec/lti/claim/lis"
CUSTOM = "https://purl.imsglobal.org/spec/lti/claim/custom"


@pytest.fixture
def roster(tmp_path):
    db = Database(str(tmp_path / "service.db"))
    db.migrate()
    with db.writing() as session:
        session.add_all([Student(student_id="s001", name="Ada", email="ada@example.edu",
                                 on_roster=True, added_at=now()),
                         Student(student_id="s002", name="Twin A", email="twins@example.edu",
                                 on_roster=True, added_at=now()),
                         Student(student_id="s003", name="Twin B", email="Twins@example.edu",
                                 on_roster=True, added_at=now()),
                         Student(student_id="s004", name="Gone", email="gone@example.edu",
                                 on_roster=False, added_at=now())])
    yield db
    db.close()


def found(db: Database, claims: dict, way: str) -> str | None:
    value = launch_identity(claims, way)
    with db.reading() as session:
        student = find_student(session, value, way) if value else None
        return student.student_id if student else None


def test_a_launch_finds_one_roster_entry_or_none(roster):
    # by email, any case
    assert found(roster, {"email": "ADA@example.edu", "sub": "s002"}, "email") == "s001"
    # an email two students share: neither
    assert found(roster, {"email": "twins@example.edu"}, "email") is None
    assert found(roster, {"email": "gone@example.edu"}, "email") is None  # off the roster
    assert found(roster, {"sub": "s001"}, "email") is None  # no email sent: nobody
    assert found(roster, {"email": "ada@example.edu", "sub": "s002"}, "sub") == "s002"
    assert (
        found(roster, {"email": "ada@example.edu", LIS: {"person_sourcedid": "s003"}}, "sourcedid")
        == "s003"
    )
    assert (
        found(roster, {"email": "ada@example.edu", CUSTOM: {"student_id": "s002"}}, "custom")
        == "s002"
    )
    assert (
        found(roster, {"email": "ada@example.edu", CUSTOM: {"student_id": "s004"}}, "custom")
        is None
    )


def test_names_and_roles_add_and_update_learners_and_remove_nobody(roster):
    learner = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
    members = [{"user_id": "u1", "name": "Ada Lovelace", "email": "ADA@example.edu",
                "roles": [learner]},
               {"user_id": "u9", "name": "New", "email": "new@example.edu",
                "lis_person_sourcedid": "n9", "roles": [learner]},
               {"user_id": "u8", "name": "Left", "email": "left@example.edu", "roles": [learner],
                "status": "Inactive"},
               {"user_id": "t1", "name": "Prof", "email": "prof@example.edu",
                "roles": ["Instructor"]}]
    rows = [row for row in (roster_row(member, "email") for member in members) if row is not None]
    # learners, active; the SIS id first
    assert [row.student_id for row in rows] == ["ada@example.edu", "n9"]
    with roster.writing() as session:
        assert merge_roster(session, rows, "email") == (1, 1)
    with roster.reading() as session:
        everyone = {s.student_id: (s.name, s.on_roster) for s in session.query(Student)}
    assert everyone["s001"] == ("Ada Lovelace", True) and everyone["n9"] == ("New", True)
    # matched, not added twice
    assert everyone["s002"] == ("Twin A", True) and "ada@example.edu" not in everyone
    assert everyone["s004"] == ("Gone", False)


def test_the_score_names_the_attempt_its_feedback_and_a_late_hand_in():
    link = LtiLink(lti_user_id="lms-7", tool_url="https://grader.example.edu")
    row = Submission(id=42, score=8.0, max_score=11.0, late=True,
                     created_at=datetime(2026, 11, 26, 9, 30))
    score = score_of(row, link, "Toy BPE").get_value()
    assert (
        '"scoreGiven": 8.0' in score
        and '"scoreMaximum": 11.0' in score
        and '"userId": "lms-7"' in score
    )
    assert (
        "Toy BPE: 8 / 11 (handed in late), submission #42. Feedback: "
        "https://grader.example.edu/me/submissions/42"
        in score
    )
    on_time = score_of(
        Submission(
            id=43, score=11.0, max_score=11.0, late=False, created_at=datetime(2026, 11, 26)
        ), link, "Toy BPE",
    )
    assert "late" not in on_time.get_value()


def test_the_configuration_is_checked_entry_by_entry(tmp_path: Path):
    write_keys(tmp_path / "keys")
    with pytest.raises(ConfigError, match="not overwritten"):
        write_keys(tmp_path / "keys")
    assert (tmp_path / "keys" / "lti-private.pem").stat().st_mode & 0o077 == 0  # owner-only
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "lti-private.pem").write_text("not a key\n", encoding="utf-8")
    (tmp_path / "junk" / "lti-public.pem").write_text("not a key either\n", encoding="utf-8")
    good = {"client_id": "c1", "auth_login_url": "https://lms.example.edu/auth",
            "auth_token_url": "https://lms.example.edu/token",
            "key_set_url": "https://lms.example.edu/jwks",
            "private_key_file": "keys/lti-private.pem",
            "public_key_file": "keys/lti-public.pem", "deployment_ids": ["d1"]}
    cases = {
        "good": (good, None),
        "no-deployment": ({**good, "deployment_ids": []}, "lists no deployment_ids"),
        "no-keyset": (
            {key: value for key, value in good.items() if key != "key_set_url"}, "key_set_url",
        ),
        "no-public-key": (
            {key: value for key, value in good.items() if key != "public_key_file"},
            "public_key_file",
        ),
        "junk-keys": (
            {
                **good, "private_key_file": "junk/lti-private.pem",
                "public_key_file": "junk/lti-public.pem",
            }, "not an RSA key pair",
        ),
        "no-login": (
            {key: value for key, value in good.items() if key != "auth_login_url"},
            "auth_login_url",
        ),
    }
    for name, (entry, why) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"https://lms.example.edu": [entry]}), encoding="utf-8")
        if why is None:
            assert load(path).find_registration("https://lms.example.edu").get_client_id() == "c1"
        else:
            with pytest.raises(ConfigError, match=why):
                load(path)
    with pytest.raises(ConfigError, match="could not be read"):
        load(tmp_path / "missing.json")
    (tmp_path / "not-json.json").write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="is not JSON"):
        load(tmp_path / "not-json.json")

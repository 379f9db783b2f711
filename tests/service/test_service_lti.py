"""LTI 1.3 end to end: a real platform (lti1p3platform, ``lti_platform.py``) registers the real
service (a server process started with ``serve --lti``) and launches it through a browser's steps:
the platform's OIDC login start, the tool's redirect, the platform's signed launch form posted to
the tool. An instructor deep-links a lab, a student launched from the LMS is signed in as their
roster entry and hands in a notebook, it is graded, and the LMS gradebook receives the counted
attempt's score. Names and Roles builds the roster. Forged, tampered, expired, replayed and unknown
launches are refused with a page that says why, and leave nothing in the database.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import parse_qs, quote, urljoin, urlsplit

import httpx
import pytest
from bs4 import BeautifulSoup

from lti_browser import Browser
from lti_platform import INSTRUCTOR, LEARNER, Platform, key_pair
from service_helpers import EXAMPLES, INSTRUCTOR_PASSWORD, make_service

CHROMIUM = "/usr/bin/chromium"

TOY_POINTS = 11  # toy_bpe's parts: 2 + 2 + 2 + 3 + 2


@pytest.fixture(scope="module")
def lti(tmp_path_factory):
    """The service with an LTI configuration, and the platform it is registered with."""
    folder = tmp_path_factory.mktemp("lti")
    # beside make_service's
    keys = subprocess.Popen([sys.executable, "-m", "autograder", "lti-keys", str(folder / "keys")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    server = make_service(folder, "--workers", "1", "--rate", "0", "--counted", "best",
                          # s004: on the roster, not in the LMS
                          students=["s001", "s002", "s003", "s004"])
    said, complaint = keys.communicate(timeout=120)
    assert keys.returncode == 0 and "lti-private.pem" in said, complaint
    platform = Platform(server.url)
    platform.start()
    (folder / "lti.json").write_text(json.dumps({platform.registration.get_iss(): [{
        "client_id": platform.registration.get_client_id(), "default": True,
        "auth_login_url": f"{platform.url}/authorize", "auth_token_url": f"{platform.url}/token",
        "key_set_url": f"{platform.url}/jwks", "private_key_file": "keys/lti-private.pem",
        "public_key_file": "keys/lti-public.pem", "deployment_ids": ["deployment-1"]}]}),
                                     encoding="utf-8")
    server.args += ["--lti", str(folder / "lti.json"), "--public-url", server.url]
    # the roster's s001 (email, any case)
    platform.add_user("lms-1", "Ada Lovelace", "S001@example.edu", [LEARNER])
    platform.add_user("lms-2", "Alan Turing", "s002@example.edu", [LEARNER])
    platform.add_user("lms-3", "Emmy Noether", "s003@example.edu", [LEARNER])
    platform.add_user("lms-teacher", "Grace Hopper", "hopper@example.edu", [INSTRUCTOR])
    # not on the roster
    platform.add_user("lms-new", "Katherine Johnson", "kj@example.edu", [LEARNER], sourcedid="n100")
    server.start()
    yield server, platform
    server.stop()
    platform.stop()


def counts(server) -> dict[str, int]:
    """Rows per table; lti_state without the spent nonces, which a signed launch leaves (accepted or
    refused: a replay guard, kept until the nonce would have expired)."""
    with sqlite3.connect(server.db) as db:
        found = {table: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                 for table in ("web_sessions", "lti_links", "students", "submissions")}
        found["lti_state"] = db.execute("SELECT count(*) FROM lti_state WHERE key NOT LIKE "
                                        "'lti1p3-nonce-%'").fetchone()[0]
        return found


def all_state(server) -> int:
    with sqlite3.connect(server.db) as db:
        return db.execute("SELECT count(*) FROM lti_state").fetchone()[0]


def launch(
    platform: Platform, link, user: str, target: str = "window"
) -> tuple[Browser, httpx.Response]:
    """A browser opens the LMS assignment: the platform's
    launch form, not yet posted to the tool."""
    browser = Browser()
    page = browser.go("GET", platform.launch_url(link, user, target))
    assert page.status_code == 200 and 'name="id_token"' in page.text, page.text[:500]
    return browser, page


def lab_form(chooser: httpx.Response, lab: str) -> int:
    """The index of the chooser's form that picks ``lab``."""
    forms = BeautifulSoup(chooser.text, "html.parser").find_all("form")
    return [i for i, form in enumerate(forms) if form.find("input", {"name": "lab", "value": lab})][
        0
    ]


def wait_for(condition, seconds: float = 180, what: str = ""):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"not within {seconds} s: {what}")


def test_deep_linked_lab_launched_by_a_student_is_graded_and_the_gradebook_gets_the_score(lti):
    server, platform = lti
    # The instructor adds the tool to an assignment and chooses the lab (deep linking).
    teacher = Browser()
    chooser = teacher.submit(teacher.go("GET", platform.deep_link_url("lms-teacher")))
    assert chooser.status_code == 200 and "Which lab is this assignment?" in chooser.text, (
        chooser.text[:800]
    )
    assert (
        "frame-ancestors *" in chooser.headers["content-security-policy"]
        and "x-frame-options" not in chooser.headers
    )
    toy = lab_form(chooser, "toy_bpe")
    answer = teacher.submit(chooser, toy)
    assert answer.status_code == 200 and 'name="JWT"' in answer.text
    assert urlsplit(teacher.form(answer)[0]).netloc == urlsplit(platform.url).netloc
    assert "script-src 'nonce-" in answer.headers["content-security-policy"]
    # the platform verified the tool's signed answer
    assert "added: link-" in teacher.submit(answer).text
    item = platform.deep_linked[-1]
    assert item["type"] == "ltiResourceLink" and item["custom"] == {"lab": "toy_bpe"}
    assert (
        item["lineItem"]["scoreMaximum"] == TOY_POINTS
        and item["lineItem"]["resourceId"] == "toy_bpe"
    )
    link = platform.links[item["link_id"]]
    again = teacher.submit(chooser, toy)  # the chooser answers once
    assert again.status_code == 403 and "already used" in again.text

    # A student opens it: signed in as their roster entry (matched by email), no token.
    before = counts(server)
    student, form = launch(platform, link, "lms-1")
    page = student.submit(form)
    assert page.status_code == 200 and urlsplit(str(page.url)).path == "/me", page.text[:800]
    assert "Student s001" in page.text and "Hand in a notebook" in page.text
    assert counts(server)["web_sessions"] == before["web_sessions"] + 1
    # the OIDC state, across sites
    state = [c for c in student.set_cookies if c.startswith("lti1p3-state-")][0].lower()
    assert all(flag in state
               for flag in ("samesite=none", "secure", "httponly", "partitioned", "max-age"))
    session_value = student.jars[urlsplit(server.url).netloc]["autograder_session"]
    with sqlite3.connect(server.db) as db:
        assert db.execute(
            "SELECT via, student_id FROM web_sessions ORDER BY created_at DESC"
        ).fetchone() == ("lti", "s001")
        stored = " ".join(str(value) for row in db.execute("SELECT * FROM web_sessions")
                          for value in row)
        assert session_value not in stored  # kept hashed
        assert db.execute("SELECT student_id, lab, lti_user_id FROM lti_links").fetchall() == [
            ("s001", "toy_bpe", "lms-1")
        ]
    # A classmate opens the same assignment: their own gradebook link, which s001's results never
    # use.
    classmate, form = launch(platform, link, "lms-2")
    assert urlsplit(str(classmate.submit(form).url)).path == "/me"

    # ... hands in the lab on the page while the LMS's gradebook is away: it is graded, the post
    # fails and instructors see why on the dashboard; a worse attempt follows while the post waits
    # to be tried again.
    # instructors see why on the dashboard; a worse attempt
    # follows while the post waits to be tried again.
    def hand_in(browser: Browser, example: str) -> int:
        csrf = re.search(
            r'name="csrf" value="([^"]+)"', browser.go("GET", f"{server.url}/me").text
        ).group(1)
        handed = browser.go("POST", f"{server.url}/me/submissions", data={"csrf": csrf},
                            files={"notebook": ("toy_bpe.ipynb",
                                                (EXAMPLES / example).read_bytes())})
        return int(urlsplit(str(handed.url)).path.rsplit("/", 1)[-1])

    def graded(number: int):
        with sqlite3.connect(server.db) as db:
            return db.execute("SELECT status, score, max_score FROM submissions WHERE id = ? AND "
                              "status IN ('graded', 'error')", (number,)).fetchone()

    def link_row(query: str):  # the poster writes what it posted once the LMS has answered
        with sqlite3.connect(server.db) as db:
            return db.execute(query + " WHERE student_id = 's001'").fetchone()

    platform.scores_down = True
    try:
        first_id = hand_in(student, "toy-correct.ipynb")
        status, score, max_score = wait_for(lambda: graded(first_id),
                                            what="the submission's result")
        assert status == "graded" and max_score == TOY_POINTS and score > 0
        tries, error = wait_for(
            lambda: (lambda row: row if row[1] else None)(
                link_row("SELECT tries, error FROM lti_links")
            ), 60, "a failed post",
        )
        assert tries >= 1 and "503" in error and not platform.scores.get(link.lineitem_id)
        staff = Browser()
        signed = staff.submit(staff.go("GET", f"{server.url}/dashboard/signin"), username="prof",
                              password=INSTRUCTOR_PASSWORD)
        line = BeautifulSoup(signed.text, "html.parser").find(id="lms").get_text(" ", strip=True)
        assert "1 failing" in line and "s001, toy_bpe" in line and "503" in line, line
        worse_id = hand_in(student, "toy-untouched.ipynb")
    finally:
        platform.scores_down = False

    # The LMS is back: the post is tried again, with the score and the feedback's address.
    posted = wait_for(lambda: platform.scores.get(link.lineitem_id, {}).get("lms-1"), 60,
                      "the post tried again")
    assert posted["scoreGiven"] == score and posted["scoreMaximum"] == TOY_POINTS
    assert posted["gradingProgress"] == "FullyGraded" and posted["activityProgress"] == "Completed"
    feedback = re.search(r"Feedback: (\S+)", posted["comment"]).group(1)
    assert feedback == f"{server.url}/me/submissions/{first_id}"
    shown = student.go("GET", feedback)
    assert shown.status_code == 200 and f"{score:g}" in shown.text
    assert classmate.go("GET", feedback).status_code == 404  # the classmate cannot read it

    # The worse attempt's result is posted too: the gradebook keeps the counted attempt (--counted
    # best), not the last.
    assert wait_for(lambda: graded(worse_id), what="the second result")[1] < score
    assert wait_for(lambda: link_row("SELECT wanted, posted, posted_submission_id, posted_score, "
                                     "error FROM lti_links")
                    # the launch, and two results
                    == (3, 3, first_id, score, None), 30, "the link marked posted")
    last = platform.scores[link.lineitem_id]["lms-1"]
    assert last["scoreGiven"] == score and last["comment"].endswith(f"/me/submissions/{first_id}")
    assert set(platform.scores[link.lineitem_id]) == {"lms-1"}  # nothing in the classmate's cell

    # Another assignment of the lab (a column made by hand), opened after handing in: the counted
    # attempt goes there at once.
    later = platform.add_link({"lab": "toy_bpe"}, score_maximum=TOY_POINTS)
    again_browser, form = launch(platform, later, "lms-1")
    assert urlsplit(str(again_browser.submit(form).url)).path == "/me"
    at_once = wait_for(lambda: platform.scores.get(later.lineitem_id, {}).get("lms-1"), 30,
                       "the post of a later launch")
    assert at_once["scoreGiven"] == score and at_once["comment"].endswith(
        f"/me/submissions/{first_id}"
    )


def test_names_and_roles_build_the_roster(lti):
    server, platform = lti
    # made by hand, as Moodle's custom parameter
    link = platform.add_link({"lab": "ny_constitution"}, score_maximum=10)
    before = counts(server)
    newcomer, form = launch(platform, link, "lms-new")
    refused = newcomer.submit(form)
    assert (
        refused.status_code == 403
        and "not on this course" in refused.text
        and not newcomer.session_cookie()
    )
    # no session, no gradebook link, no roster entry; the launch's state gone
    after = counts(server)
    assert {k: v for k, v in after.items() if k != "lti_state"} == {k: v
                                                                    for k, v in before.items()
                                                                    if k != "lti_state"}
    assert after["lti_state"] <= before["lti_state"]

    teacher, form = launch(platform, link, "lms-teacher")
    page = teacher.submit(form)
    assert (
        page.status_code == 200
        and "Update the roster from the LMS" in page.text
        and not teacher.session_cookie()
    )
    built = teacher.submit(page)
    assert (
        built.status_code == 200 and "1 added" in built.text and "3 already there" in built.text
    ), built.text[:800]
    with sqlite3.connect(server.db) as db:
        assert db.execute(
            "SELECT name, email, on_roster FROM students WHERE student_id = 'n100'"
        ).fetchone() == ("Katherine Johnson", "kj@example.edu", 1)
        assert db.execute("SELECT name FROM students WHERE student_id = 's001'").fetchone() == (
            "Ada Lovelace",
        )
        # nobody removed
        assert db.execute(
            "SELECT on_roster FROM students WHERE student_id = 's004'"
        ).fetchone() == (1,)
        # learners only
        assert db.execute(
            "SELECT count(*) FROM students WHERE email = 'hopper@example.edu'"
        ).fetchone() == (0,)
    newcomer, form = launch(platform, link, "lms-new")
    page = newcomer.submit(form)
    assert (
        page.status_code == 200 and "Katherine Johnson" in page.text and newcomer.session_cookie()
    )


def _part(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _claims(token: str) -> tuple[dict, dict]:
    """A JWT's header and payload, read without checking anything."""
    header, payload = (json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
                       for part in token.split(".")[:2])
    return header, payload


def _tampered(token: str, **claims) -> str:
    """The JWT with its payload changed and its signature
    kept (a student editing the launch form)."""
    header, payload, signature = token.split(".")
    return ".".join([header, _part(json.dumps({**_claims(token)[1], **claims}).encode()),
                     signature])


def _self_signed(token: str, alg: str, secret: bytes = b"", **claims) -> str:
    """The JWT changed and signed again by whoever changed it: ``alg`` none (no signature), or
    HS256 keyed with a key they know (the platform's *public* key: the classic confusion of RS256
    and HS256)."""
    header, payload = _claims(token)
    signed_header = _part(json.dumps({**header, "alg": alg}).encode())
    signing = f"{signed_header}.{_part(json.dumps({**payload, **claims}).encode())}"
    signature = (
        hmac.new(secret, signing.encode(), hashlib.sha256).digest() if alg == "HS256" else b""
    )
    return f"{signing}.{_part(signature)}"


def test_refused_launches_say_why_and_record_nothing(lti):
    server, platform = lti
    link = platform.add_link({"lab": "toy_bpe"}, score_maximum=TOY_POINTS)

    def refused(
        answer: httpx.Response, browser: Browser, status: int, why: str, before: dict
    ) -> None:
        assert (
            answer.status_code == status and "The launch from the LMS was refused" in answer.text
        ), answer.text[:800]
        assert why in answer.text, answer.text[:800]
        assert not browser.session_cookie()
        after = counts(server)
        assert {k: after[k] for k in after if k != "lti_state"} == {k: before[k] for k in before
                                                                    if k != "lti_state"}
        # the nonce, if one was kept, is gone; nothing else stays
        assert after["lti_state"] <= before["lti_state"]

    # a student edits the signed launch to become another student: the signature no longer matches
    before = counts(server)
    browser, form = launch(platform, link, "lms-2")
    action, fields = browser.form(form)
    forged = _tampered(fields["id_token"], sub="lms-1", email="s001@example.edu")
    refused(browser.go("POST", action, data={**fields, "id_token": forged}), browser, 403,
            "signature is wrong", before)

    # a message signed with a key the platform does not publish
    real = platform.registration.get_platform_private_key()
    platform.registration.set_platform_private_key(key_pair()[0])
    try:
        browser, form = launch(platform, link, "lms-2")
        refused(browser.submit(form), browser, 403, "signature is wrong", before)
    finally:
        platform.registration.set_platform_private_key(real)

    # a launch a student signs themselves, as another student: with no signature (alg none), and
    # with HMAC keyed by the platform's public key (which anyone can read at its JWKS address)
    for alg, secret in (("none", b""), ("HS256", platform.public_key.encode())):
        browser, form = launch(platform, link, "lms-2")
        action, fields = browser.form(form)
        forged = _self_signed(fields["id_token"], alg, secret, sub="lms-1",
                              email="s001@example.edu")
        refused(browser.go("POST", action, data={**fields, "id_token": forged}), browser, 403,
                "signature is wrong", before)

    # a launch the LMS signed for another tool (another client id): not this service's to take
    platform.registration.set_client_id("another-tool")
    try:
        browser = Browser()
        page = browser.go("GET", platform.launch_url(link, "lms-2"))
        if 'name="id_token"' in page.text:  # the login step may let it through: the launch may not
            page = browser.submit(page)
        refused(page, browser, 403, "not registered with this grading service", before)
    finally:
        platform.registration.set_client_id("bpe-labs-client")

    # a message that expired before it arrived
    platform.id_token_seconds = -120
    try:
        browser, form = launch(platform, link, "lms-2")
        refused(browser.submit(form), browser, 403, "has expired", before)
    finally:
        platform.id_token_seconds = 300

    # a nonce this service did not sign, or whose five minutes had gone by (the nonce is signed with
    # its expiry, not stored: nonces.py's doctests): the login's redirect to the LMS altered on the
    # way
    browser = Browser()
    answer = browser.request("GET", platform.launch_url(link, "lms-2"))
    while "/authorize" not in answer.headers["location"]:
        answer = browser.request("GET", urljoin(str(answer.url), answer.headers["location"]))
    authorize = answer.headers["location"]
    nonce = parse_qs(urlsplit(authorize).query)["nonce"][0]
    body, _, mac = nonce.rpartition(".")
    for altered in (f"{body.rpartition('.')[0]}.{int(time.time()) + 86400}.{mac}",
                    f"{body}.{'0' * len(mac)}"):
        form = browser.go("GET", authorize.replace(nonce, altered))
        refused(browser.submit(form), browser, 403, "already used, or it is too old", before)

    # a launch posted twice: the first signs in, the second is refused (from the same browser: the
    # nonce was taken; from another one: no state cookie either)
    browser, form = launch(platform, link, "lms-2")
    action, fields = browser.form(form)
    assert browser.go("POST", action, data=fields).status_code == 200 and browser.session_cookie()
    before = counts(server)
    browser.set_cookies.clear()
    refused(browser.go("POST", action, data=fields), browser, 403, "already used", before)
    replay = Browser()
    refused(replay.go("POST", action, data=fields), replay, 403, "did not start in this browser",
            before)

    # the same launch posted four times at once (its state cookie with each): one signs in, three
    # are refused
    browser, form = launch(platform, link, "lms-2")
    action, fields = browser.form(form)
    cookie = "; ".join(f"{name}={value}"
                       for name, value in browser.jars[urlsplit(action).netloc].items())
    sessions = counts(server)["web_sessions"]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: httpx.post(action, data=fields,
                                                     headers={"Cookie": cookie,
                                                              "Origin": platform.url},
                                                     timeout=60), range(4)))
    assert sorted(answer.status_code for answer in answers) == [303, 403, 403, 403], [
        a.text[:200] for a in answers
    ]
    assert counts(server)["web_sessions"] == sessions + 1
    before = counts(server)

    # an LMS this service does not know: refused at its login already
    platform.registration.set_iss("https://unknown-lms.example.edu")
    try:
        browser = Browser()
        refused(browser.go("GET", platform.launch_url(link, "lms-2")), browser, 403,
                "not registered with this grading service", before)
    finally:
        platform.registration.set_iss("https://lms.example.edu")

    # a deployment of that LMS that was never registered
    platform.registration.set_deployment_id("deployment-2")
    try:
        browser, form = launch(platform, link, "lms-2")
        refused(browser.submit(form), browser, 403, "deployment is not registered", before)
    finally:
        platform.registration.set_deployment_id("deployment-1")

    # an assignment for a lab this course does not have
    browser, form = launch(platform, platform.add_link({"lab": "no_such_lab"}, score_maximum=5),
                           "lms-2")
    refused(browser.submit(form), browser, 404, "no_such_lab", before)


def test_only_an_instructor_chooses_the_lab_and_the_answer_is_signed(lti):
    """A deep-linking request a student gets, the chooser's form edited or posted from another
    site, and the tool's signed answer changed on its way to the LMS: each refused, no assignment
    made."""
    server, platform = lti
    made, before = len(platform.deep_linked), counts(server)
    student = Browser()
    page = student.submit(student.go("GET", platform.deep_link_url("lms-2")))
    assert (
        page.status_code == 403
        and "Only an instructor chooses" in page.text
        and not student.session_cookie()
    )
    after = counts(server)
    assert {k: v for k, v in after.items() if k != "lti_state"} == {k: v
                                                                    for k, v in before.items()
                                                                    if k != "lti_state"}

    teacher = Browser()
    chooser = teacher.submit(teacher.go("GET", platform.deep_link_url("lms-teacher")))
    action, fields = teacher.form(chooser, lab_form(chooser, "toy_bpe"))
    for changes, headers, status, why in (
            ({"lab": "no_such_lab"}, {}, 404, "no_such_lab"),  # a lab the course does not have
            # another site's page
            ({}, {"Origin": "https://evil.example"}, 403, "did not come from this site"),
            # a launch id made up
            ({"launch_id": "lti1p3-launch-" + "0" * 36}, {}, 403, "already used")):
        answer = teacher.go("POST", action, data={**fields, **changes}, headers=headers)
        assert (
            answer.status_code == status and why in answer.text and 'name="JWT"' not in answer.text
        ), answer.text[:800]

    answer = teacher.go("POST", action, data=fields)
    return_url, signed = teacher.form(answer)
    items_claim = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
    items = _claims(signed["JWT"])[1][items_claim]
    other = [{**item, "custom": {"lab": "fast_bpe"}} for item in items]
    taken = teacher.go("POST", return_url,
                       data={"JWT": _tampered(signed["JWT"], **{items_claim: other})})
    assert taken.status_code == 400 and "refused" in taken.text and "Signature" in taken.text, (
        taken.text[:300]
    )
    assert len(platform.deep_linked) == made
    # the answer as the tool signed it
    assert "added: link-" in teacher.go("POST", return_url, data=signed).text
    assert platform.deep_linked[-1]["custom"] == {"lab": "toy_bpe"}


def test_a_launch_in_a_frame_goes_on_in_a_window_of_the_same_browser_the_code_in_a_form_body(lti):
    """Finding 6: the one-time code travels in a POST body (never a URL path, which the access log,
    histories and Referer keep), and only the browser that launched can use it."""
    server, platform = lti
    browser, form = launch(platform, platform.add_link({"lab": "gpt2_bpe"}, score_maximum=10),
                           "lms-2", target="iframe")
    page = browser.submit(form)
    assert (
        page.status_code == 200
        and "Open it in a new window" in page.text
        and not browser.session_cookie()
    )
    assert (
        "frame-ancestors *" in page.headers["content-security-policy"]
        and "x-frame-options" not in page.headers
    )
    opener = BeautifulSoup(page.text, "html.parser").find("form", id="open")
    assert (
        opener["method"] == "post"
        and opener["target"] == "_blank"
        and opener["action"] == "/lti/enter"
    )
    code = browser.form(page)[1]["code"]
    # in the form's hidden field only, in no link
    assert len(code) >= 24 and page.text.count(code) == 1
    enter_cookie = [c for c in browser.set_cookies if c.startswith("autograder_lti_enter=")][
        -1
    ].lower()
    assert {"secure", "httponly", "samesite=none", "path=/lti/enter"} <= {
        f.strip() for f in enter_cookie.split(";")[1:]
    }
    sessions = "SELECT count(*) FROM web_sessions WHERE student_id = 's002' AND via = 'lti'"
    with sqlite3.connect(server.db) as db:
        before = db.execute(sessions).fetchone()[0]
    # another browser holding only the code: refused, and the code stays good for its own browser
    thief = Browser().go("POST", f"{server.url}/lti/enter", data={"code": code})
    assert thief.status_code == 403 and "not in the browser that opened" in thief.text
    assert not any(c.startswith("autograder_session=")
                   for c in thief.headers.get_list("set-cookie"))
    # no code in a path
    assert Browser().go("GET", f"{server.url}/lti/enter/{'x' * 32}").status_code in (404, 405)
    forged = browser.go("POST", f"{server.url}/lti/enter", data={"code": code},
                        headers={"Origin": "https://evil.example"})
    assert forged.status_code == 403 and "did not come from this site" in forged.text
    mine = browser.submit(page)  # the new window: the same browser, its cookies
    assert (
        urlsplit(str(mine.url)).path == "/me"
        and "Hand in a notebook" in mine.text
        and browser.session_cookie()
    )
    with sqlite3.connect(server.db) as db:
        assert db.execute(sessions).fetchone()[0] == before + 1
    again = browser.go("POST", f"{server.url}/lti/enter", data={"code": code})
    assert again.status_code == 403 and "already used" in again.text
    # uvicorn's access log names every path
    assert code not in server.log.read_text(encoding="utf-8")


def test_the_addresses_handed_to_the_lms_come_from_the_configuration_not_the_host_header(lti):
    """Finding 5: a launch posted with another Host header still records the configured address,
    which the LMS gradebook's feedback link is built from; the OIDC redirect and canvas.json too."""
    server, platform = lti
    evil = {"Host": "grader.evil.example"}
    browser, form = launch(platform, platform.add_link({"lab": "ny_constitution"}, score_maximum=6),
                           "lms-3")
    action, fields = browser.form(form)
    answer = browser.go("POST", action, data=fields, headers=dict(evil))
    assert answer.status_code == 200 and "Hand in a notebook" in answer.text, answer.text[:300]
    with sqlite3.connect(server.db) as db:
        urls = {row[0]
                for row in db.execute("SELECT tool_url FROM lti_links WHERE student_id = 's003'")}
    assert urls == {server.url}, urls
    login = httpx.get(f"{server.url}/lti/login", headers=evil, params={
        "iss": platform.registration.get_iss(), "client_id": platform.registration.get_client_id(),
        "login_hint": "lms-3", "target_link_uri": f"{server.url}/lti/launch"})
    assert login.status_code == 302 and "evil" not in login.headers["location"]
    assert f"redirect_uri={quote(server.url + '/lti/launch', safe='')}" in login.headers["location"]
    canvas = httpx.get(f"{server.url}/lti/canvas.json", headers=evil).json()
    assert (
        "evil" not in json.dumps(canvas) and canvas["target_link_uri"] == f"{server.url}/lti/launch"
    )


def test_login_initiation_writes_nothing(lti):
    """Finding 9: anyone may start an OIDC login, signed in or not: it writes no row (the nonce is
    signed, not stored); the launch that comes back spends it once."""
    server, platform = lti
    params = {"iss": platform.registration.get_iss(),
              "client_id": platform.registration.get_client_id(),
              "login_hint": "lms-1", "target_link_uri": f"{server.url}/lti/launch"}
    before = counts(server), all_state(server)
    with httpx.Client(base_url=server.url, timeout=60) as client:
        answers = [client.get("/lti/login", params=params) for _ in range(60)]
    assert {answer.status_code for answer in answers} == {302}
    assert (counts(server), all_state(server)) == before
    # and a launch still works, once
    browser, form = launch(platform, platform.add_link({"lab": "toy_bpe"}), "lms-1")
    action, fields = browser.form(form)
    assert "Hand in a notebook" in browser.go("POST", action, data=fields).text
    replay = Browser()
    replay.jars = {host: dict(jar) for host, jar in browser.jars.items()}
    assert replay.go("POST", action, data=fields).status_code in (400, 403)


def test_keys_configuration_and_the_tool_addresses(lti, tmp_path):
    server, platform = lti
    keys = httpx.get(f"{server.url}/lti/jwks").json()["keys"]
    assert (
        len(keys) == 1
        and keys[0]["kty"] == "RSA"
        and keys[0]["alg"] == "RS256"
        and "d" not in keys[0]
    )
    assert (server.folder / "keys" / "lti-private.pem").stat().st_mode & 0o077 == 0  # owner-only
    canvas = httpx.get(f"{server.url}/lti/canvas.json").json()
    assert (
        canvas["oidc_initiation_url"] == f"{server.url}/lti/login"
        and canvas["public_jwk_url"] == f"{server.url}/lti/jwks"
    )
    assert canvas["target_link_uri"] == f"{server.url}/lti/launch"
    assert {
        "https://purl.imsglobal.org/spec/lti-ags/scope/score",
        "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
    } <= set(canvas["scopes"])
    canvas_extension = canvas["extensions"][0]
    assert canvas_extension["privacy_level"] == "public"
    assert {p["message_type"] for p in canvas_extension["settings"]["placements"]} == {
        "LtiDeepLinkingRequest"
    }
    # what serve printed: the addresses an LMS asks for
    started = server.log.read_text(encoding="utf-8")
    assert (
        f"login {server.url}/lti/login, launch {server.url}/lti/launch, keys {server.url}/lti/jwks"
        in started
    )

    (tmp_path / "broken.json").write_text('{"https://lms.example.edu": {"client_id": "x"}}',
                                          encoding="utf-8")
    # the commands at once: each is a Python start-up, the
    # test waits for one (the checks: test_lti_units.py)
    mistakes = {
        "not overwritten": ["lti-keys", str(server.folder / "keys")],
        "auth_login_url": ["serve", "--db", str(tmp_path / "b.db"), "--lti",
                           str(tmp_path / "broken.json")]}
    running = {why: subprocess.Popen([sys.executable, "-m", "autograder", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for why, args in mistakes.items()}
    for why, process in running.items():
        _out, said = process.communicate(timeout=120)
        assert process.returncode == 2 and said.count("\n") == 1 and why in said, (why, said)


@pytest.mark.skipif(not Path(CHROMIUM).exists(),
                    reason="Debian's chromium is not installed (apt-get install chromium; .ci/run "
                    "does)")
def test_in_chromium_the_lms_deep_links_and_launches_across_sites(lti):
    """The same steps in a real browser, the LMS on another site (localhost) than the service
    (127.0.0.1): the platform's form posts itself, the cross-site state cookie comes back, the
    chooser's signed answer goes back to the LMS by its nonce'd script, and the student lands
    signed in."""
    server, platform = lti
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            # any answer of the LMS or of the service that is
            # an error (a browser's own favicon.ico aside)
            errors = []
            context = chromium.new_context()
            context.on("response", lambda answer: errors.append(f"{answer.status} {answer.url}")
                       if answer.status >= 400 and not answer.url.endswith("/favicon.ico")
                       else None)
            page = context.new_page()
            page.goto(platform.deep_link_url("lms-teacher"))
            page.wait_for_selector("#labs")
            assert urlsplit(page.url).netloc == urlsplit(server.url).netloc
            made = len(platform.deep_linked)
            page.click("form:has(input[value=gpt2_bpe]) button")
            page.wait_for_selector("text=added: link-")  # the LMS took the signed answer
            assert len(platform.deep_linked) == made + 1 and platform.deep_linked[-1]["custom"] == {
                "lab": "gpt2_bpe"
            }
            link = platform.links[platform.deep_linked[-1]["link_id"]]

            student = context.browser.new_context().new_page()  # the student's own browser profile
            student.context.on("response",
                               lambda answer: errors.append(f"{answer.status} {answer.url}")
                               if answer.status >= 400 and not answer.url.endswith("/favicon.ico")
                               else None)
            student.goto(platform.launch_url(link, "lms-2"))
            student.wait_for_url(f"{server.url}/me")
            assert "Hand in a notebook" in student.inner_text("body")
            cookies = {cookie["name"]: cookie for cookie in student.context.cookies(server.url)}
            assert (
                cookies["autograder_session"]["httpOnly"]
                and cookies["autograder_session"]["sameSite"] == "Lax"
            )
            assert not errors, errors
        finally:
            chromium.close()

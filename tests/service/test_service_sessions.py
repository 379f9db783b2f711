"""Sessions and accounts through real HTTP (issue 35, findings 3 and 7): revoking or re-issuing a
token ends the web sessions it opened at once; failed sign-ins are limited per account and per
address (429 with Retry-After, before any password is hashed); staff passwords that are common or
guessable are refused by ``accounts add``."""
from __future__ import annotations

import csv
import sqlite3
import time

import httpx

from service_helpers import EXAMPLES, INSTRUCTOR_PASSWORD, command
from test_service_web import _cookies, _csrf, sign_in

NOTEBOOK = (EXAMPLES / "toy-correct.ipynb").read_bytes()


def _upload_page(client: httpx.Client) -> httpx.Response:
    page = client.get("/me")
    if page.status_code != 200:
        return page
    return client.post("/me/submissions", data={"csrf": _csrf(page.text)},
                       files={"notebook": ("toy.ipynb", NOTEBOOK)})


def test_revoking_or_reissuing_a_token_ends_the_sessions_it_opened(service, tmp_path):
    student = "s014"  # test_service_api.py uses s014 too (refused uploads)
    web = sign_in(service, "/", {"token": service.tokens[student]})
    assert web.get("/me").status_code == 200
    revoked = command("tokens", "--revoke", student, "--db", str(service.db))
    assert revoked.returncode == 0 and "1 token(s) revoked" in revoked.stdout, revoked.stderr
    # the API, as before
    assert service.client(student).get("/api/v1/submissions").status_code == 401
    page = web.get("/me")  # the page, now too: signed out at once
    assert page.status_code == 303 and page.headers["location"] == "/"
    before = len(sqlite3.connect(service.db).execute("SELECT id FROM submissions WHERE "
                                                     "student_id = ?", (student,)).fetchall())
    refused = _upload_page(web)
    assert refused.status_code == 303 and refused.headers["location"] == "/"
    web.headers["Cookie"] += "; autograder_csrf=x"
    forced = web.post("/me/submissions", data={"csrf": "x"},
                      files={"notebook": ("toy.ipynb", NOTEBOOK)})
    assert forced.status_code == 303
    with sqlite3.connect(service.db) as db:
        assert (
            len(
                db.execute("SELECT id FROM submissions WHERE student_id = ?", (student,)).fetchall()
            )
            == before
        )

    # a new token: a session opened with it works until the token is re-issued
    out = tmp_path / "new.csv"
    reissued = command("tokens", "--reissue", student, "--db", str(service.db), "--out", str(out))
    assert reissued.returncode == 0, reissued.stderr
    token = {
        row["student_id"]: row["token"] for row in csv.DictReader(open(out, encoding="utf-8"))
    }[student]
    again = sign_in(service, "/", {"token": token})
    assert again.get("/me").status_code == 200
    out.unlink()
    assert (
        command(
            "tokens", "--reissue", student, "--db", str(service.db), "--out", str(out)
        ).returncode
        == 0
    )
    assert again.get("/me").status_code == 303
    service.tokens[student] = {
        row["student_id"]: row["token"] for row in csv.DictReader(open(out, encoding="utf-8"))
    }[student]


def _dashboard_attempt(service, username: str, password: str, address: str) -> httpx.Response:
    """One sign-in on the dashboard's form, from ``address``
    (as the trusted proxy on loopback says)."""
    client = httpx.Client(base_url=service.url, timeout=60, headers={"X-Forwarded-For": address})
    form = client.get("/dashboard/signin")
    return client.post("/dashboard/signin",
                       data={"username": username, "password": password, "csrf": _csrf(form.text)},
                       headers={"Cookie": f"autograder_csrf={_cookies(form)['autograder_csrf']}"})


def test_failed_sign_ins_are_limited_per_account_with_retry_after(service):
    from autograder.service.database import Database
    from autograder.service.tokens import set_account

    # an account of this test's own: the others keep signing in
    database = Database(str(service.db))
    with database.writing() as session:
        set_account(session, "guessed", "ta", "a long passphrase nobody guesses")
    database.close()
    answers = [_dashboard_attempt(service, "guessed", f"wrong guess {n}", f"10.1.0.{n}")
               for n in range(8)]
    statuses = [answer.status_code for answer in answers]
    # from 8 addresses: the account's limit
    assert statuses[:5] == [401] * 5 and statuses[5:] == [429] * 3, statuses
    assert 1 <= int(answers[-1].headers["retry-after"]) <= 60 and "try again in" in answers[-1].text
    # while it lasts, even the right password is refused (a guesser learns nothing from the answer)
    assert (
        _dashboard_attempt(
            service, "guessed", "a long passphrase nobody guesses", "10.1.0.99"
        ).status_code
        == 429
    )
    # another account, from the same addresses, is not held up
    assert _dashboard_attempt(service, "prof", INSTRUCTOR_PASSWORD, "10.1.0.3").status_code == 303


def test_failed_sign_ins_are_limited_per_address(service):
    started = time.monotonic()
    statuses = [
        _dashboard_attempt(service, f"nobody{n}", "wrong password", "10.2.0.1").status_code
        for n in range(23)
    ]
    assert statuses[:20] == [401] * 20 and statuses[20:] == [429] * 3, statuses
    # (the window is a minute: the test only holds if it ran within it)
    assert time.monotonic() - started < 60
    # the students' form counts against the same address; another address still signs in
    student = httpx.Client(base_url=service.url, timeout=60,
                           headers={"X-Forwarded-For": "10.2.0.1"})
    form = student.get("/")
    held = student.post("/signin", data={"token": "x.y", "csrf": _csrf(form.text)},
                        headers={"Cookie": f"autograder_csrf={_cookies(form)['autograder_csrf']}"})
    assert held.status_code == 429 and int(held.headers["retry-after"]) >= 1
    assert _dashboard_attempt(service, "prof", INSTRUCTOR_PASSWORD, "10.2.0.2").status_code == 303
    with service.client("s013") as client:  # the API is not a sign-in form: untouched
        assert client.get("/api/v1/submissions").status_code == 200


def test_accounts_add_refuses_common_and_guessable_passwords(tmp_path):
    db = str(tmp_path / "accounts.db")
    for password, said in (("password12", "too easy to guess"), ("aaaaaaaaaa", "too easy to guess"),
                           ("1234567890", "too easy to guess"),
                           ("short", "at least 10 characters")):
        done = command("accounts", "add", "prof", "--role", "instructor", "--db", db,
                       "--password-stdin", stdin=password + "\n", timeout=60)
        assert done.returncode == 2 and said in done.stderr and done.stderr.count("\n") == 1, (
            password, done.stderr,
        )
        assert "Traceback" not in done.stderr
    done = command("accounts", "add", "prof", "--role", "instructor", "--db", db,
                   "--password-stdin", stdin="violet stapler orbit canyon\n", timeout=60)
    assert done.returncode == 0 and "account ready" in done.stdout, done.stderr

"""The web pages through real HTTP: sign-in sessions and their cookies, CSRF on every form, the
dashboard for instructors and TAs, re-grading, the downloads, and what the server's log never
holds."""
from __future__ import annotations

import csv
import io
import re
import sqlite3
import time

import httpx

from service_helpers import EXAMPLES, INSTRUCTOR_PASSWORD, TA_PASSWORD, rows, upload, wait_result


def _csrf(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def _cookies(answer: httpx.Response) -> dict[str, str]:
    return {cookie.split("=", 1)[0]: cookie.split("=", 1)[1].split(";", 1)[0]
            for cookie in answer.headers.get_list("set-cookie")}


def sign_in(service, path: str, fields: dict) -> httpx.Client:
    """A client signed in through the real form (cookies passed
    by hand: httpx keeps Secure cookies for HTTPS)."""
    client = httpx.Client(base_url=service.url, timeout=60)
    form = client.get(path)
    cookies = _cookies(form)
    target = "/signin" if path == "/" else path
    answer = client.post(target, data={**fields, "csrf": _csrf(form.text)},
                         headers={"Cookie": f"autograder_csrf={cookies['autograder_csrf']}"})
    assert answer.status_code == 303, answer.text
    client.headers["Cookie"] = f"autograder_session={_cookies(answer)['autograder_session']}"
    return client


def test_session_cookies_are_secure_httponly_and_samesite(service):
    client = httpx.Client(base_url=service.url, timeout=60)
    form = client.get("/")
    csrf_cookie = [
        c for c in form.headers.get_list("set-cookie") if c.startswith("autograder_csrf=")
    ][0]
    answer = client.post("/signin",
                         data={"token": service.tokens["s006"], "csrf": _csrf(form.text)},
                         headers={"Cookie": csrf_cookie.split(";")[0]})
    assert answer.status_code == 303 and answer.headers["location"] == "/me"
    session = [
        c for c in answer.headers.get_list("set-cookie") if c.startswith("autograder_session=")
    ][0]
    flags = {flag.strip().lower() for flag in session.split(";")[1:]}
    assert {"secure", "httponly", "samesite=lax", "path=/"} <= flags, session
    assert {"secure", "httponly", "samesite=strict"} <= {f.strip().lower()
                                                         for f in csrf_cookie.split(";")[1:]}
    value = session.split(";")[0].split("=", 1)[1]
    with sqlite3.connect(service.db) as db:  # kept hashed, like the tokens
        stored = [row[0] for row in db.execute("SELECT digest FROM web_sessions")]
        token_digests = [row[0] for row in db.execute("SELECT digest FROM tokens")]
    assert value not in stored and len(stored) >= 1
    raw = service.db.read_bytes() + (service.db.with_name("service.db-wal").read_bytes()
                                     if service.db.with_name("service.db-wal").exists() else b"")
    for token in service.tokens.values():
        assert token.encode() not in raw and token.split(".")[1].encode() not in raw
    assert len(token_digests) >= len(service.tokens)


def test_a_wrong_token_on_the_page_signs_nobody_in(service):
    client = httpx.Client(base_url=service.url, timeout=60)
    form = client.get("/")
    answer = client.post("/signin", data={"token": "x.y", "csrf": _csrf(form.text)},
                         headers={"Cookie": f"autograder_csrf={_cookies(form)['autograder_csrf']}"})
    assert answer.status_code == 401 and "not accepted" in answer.text
    assert not any(c.startswith("autograder_session=")
                   for c in answer.headers.get_list("set-cookie"))


def test_a_forged_form_is_refused_and_stores_nothing(service):
    student = sign_in(service, "/", {"token": service.tokens["s006"]})
    notebook = (EXAMPLES / "toy-correct.ipynb").read_bytes()
    before = rows(service, "s006")
    # no token, a wrong token, the right token posted from another site's page
    for data, headers in (({}, {}), ({"csrf": "guess"}, {}),
                          ({"csrf": _csrf(student.get("/me").text)},
                           {"Origin": "https://evil.example"})):
        answer = student.post("/me/submissions", data=data,
                              files={"notebook": ("x.ipynb", notebook)}, headers=headers)
        assert answer.status_code == 403 and "did not come from this site" in answer.text
    # signing in from another site's form (login CSRF)
    forged = httpx.post(f"{service.url}/signin",
                        data={"token": service.tokens["s005"], "csrf": "x" * 32},
                        headers={"Cookie": "autograder_csrf=" + "y" * 32})
    assert forged.status_code == 403
    assert rows(service, "s006") == before
    # the page's own form works
    answer = student.post("/me/submissions", data={"csrf": _csrf(student.get("/me").text)},
                          files={"notebook": ("toy.ipynb", notebook)})
    assert answer.status_code == 303 and answer.headers["location"].startswith("/me/submissions/")
    page = student.get(answer.headers["location"])
    assert page.status_code == 200 and "toy_bpe" in page.text
    assert len(rows(service, "s006")) == len(before) + 1


def test_students_see_their_own_pages_only(service):
    with service.client("s006") as client:
        wait_result(client, upload(client, EXAMPLES / "ny-untouched.ipynb").json()["id"])
    owner = sign_in(service, "/", {"token": service.tokens["s006"]})
    mine = re.search(r'href="/me/submissions/(\d+)"', owner.get("/me").text).group(1)
    assert owner.get(f"/me/submissions/{mine}/feedback").status_code == 200
    other = sign_in(service, "/", {"token": service.tokens["s007"]})
    assert other.get(f"/me/submissions/{mine}").status_code == 404
    assert other.get(f"/me/submissions/{mine}/feedback").status_code == 404
    assert other.get("/dashboard").headers.get("location") == "/dashboard/signin"
    assert httpx.get(f"{service.url}/me/submissions/{mine}/feedback").status_code == 404


def test_the_dashboard_shows_progress_queue_attempts_and_downloads(service):
    with service.client("s005") as client:
        done = upload(client, EXAMPLES / "toy-merge-overlaps.ipynb")
        wait_result(client, done.json()["id"])
    ta = sign_in(service, "/dashboard/signin", {"username": "ta", "password": TA_PASSWORD})
    page = ta.get("/dashboard").text
    assert (
        "Queue" in page
        and "grading slots ready" in page
        and "Byte-Pair Encoding on toy corpora" in page
    )
    assert re.search(r"<td>merge</td><td>2</td><td>\d+%</td>", page)
    assert ta.get("/dashboard/scores.png").headers["content-type"] == "image/png"
    assert "# Class report" in ta.get("/dashboard/class_report.md").text
    students = ta.get("/dashboard/students").text
    # the roster's names are escaped
    assert "&lt;img src=x onerror=" in students and "<img src=x" not in students
    detail = ta.get("/dashboard/students/s005").text
    number = re.search(r'href="/dashboard/submissions/(\d+)"', detail).group(1)
    assert (
        "9 / 11" in detail
        and ta.get(f"/dashboard/submissions/{number}/feedback").status_code == 200
    )
    grades = list(csv.DictReader(io.StringIO(ta.get("/dashboard/grades.csv").text)))
    counted = {(row["student_id"], row["lab"]): row for row in grades}
    assert (
        counted[("s005", "toy_bpe")]["score"] == "9"
        and counted[("s005", "toy_bpe")]["merge"] == "0"
    )
    assert len(counted) == len(grades)  # one row per student and lab: the counted attempt
    book = ta.get("/dashboard/gradebook.db")
    assert book.status_code == 200 and book.content[:16] == b"SQLite format 3\x00"


def test_only_instructors_regrade_and_a_regrade_gives_one_new_result(service, tmp_path):
    with service.client("s005") as client:
        before = {item["id"]: item for item in client.get("/api/v1/submissions").json()}
    ta = sign_in(service, "/dashboard/signin", {"username": "ta", "password": TA_PASSWORD})
    refused = ta.post("/dashboard/regrade",
                      data={"student": "s005",
                            "csrf": _csrf(ta.get("/dashboard/students/s005").text)})
    assert refused.status_code == 403 and "Only instructors" in refused.text
    prof = sign_in(service, "/dashboard/signin",
                   {"username": "prof", "password": INSTRUCTOR_PASSWORD})
    forged = prof.post("/dashboard/regrade", data={"student": "s005"})
    assert forged.status_code == 403
    answer = prof.post("/dashboard/regrade",
                       data={"student": "s005",
                             "csrf": _csrf(prof.get("/dashboard/students/s005").text)})
    assert answer.status_code == 303
    with service.client("s005") as client:
        after = {number: wait_result(client, number) for number in before}
    assert {n: (r["status"], r["score"]) for n, r in after.items()} == {
        n: (r["status"], r["score"]) for n, r in before.items()
    }
    with sqlite3.connect(service.db) as db:
        assert {row[0] for row in db.execute("SELECT regrades FROM submissions WHERE student_id = "
                                             "'s005'")} == {1}


def test_a_wrong_password_signs_nobody_in(service):
    client = httpx.Client(base_url=service.url, timeout=60)
    form = client.get("/dashboard/signin")
    answer = client.post("/dashboard/signin",
                         data={"username": "prof", "password": "wrong password",
                                                    "csrf": _csrf(form.text)},
                         headers={"Cookie": f"autograder_csrf={_cookies(form)['autograder_csrf']}"})
    assert answer.status_code == 401 and "autograder_session" not in answer.headers.get(
        "set-cookie", ""
    )


def test_no_token_and_no_notebook_content_reach_the_log(service):
    marker = "NOTEBOOK-CONTENT-MARKER-7f3a"
    with service.client("s010") as client:
        notebook = (
            (EXAMPLES / "ny-untouched.ipynb")
            .read_text(encoding="utf-8")
            .replace("Coding Activity", marker, 1)
        )
        assert marker in notebook
        queued = upload(client, content=notebook.encode())
        assert queued.status_code == 202
        wait_result(client, queued.json()["id"])
        upload(client, content=b"{" + marker.encode())  # refused: its content is not logged either
    time.sleep(0.5)
    log = service.log.read_text(encoding="utf-8")
    assert "POST /api/v1/submissions" in log and "graded in" in log  # the log is written...
    assert marker not in log  # ...without what was handed in
    for token in service.tokens.values():
        assert token not in log and token.split(".")[1] not in log
    assert INSTRUCTOR_PASSWORD not in log and TA_PASSWORD not in log

"""Headers and timed pages through real HTTP (issue 35, finding 8 and WCAG 2.2.1): HSTS whenever
the request came over HTTPS, here through the trusted proxy on loopback (X-Forwarded-Proto),
never over plain HTTP; the dashboard refreshes itself only when asked to, and a pending
submission's page can be paused. (/docs and /redoc: test_service_schema.py.)"""
from __future__ import annotations

import re

import httpx

from service_helpers import EXAMPLES, INSTRUCTOR_PASSWORD, upload
from test_service_web import sign_in

REFRESH = re.compile(r'<meta http-equiv="refresh"')


def test_hsts_whenever_the_request_came_over_https(service):
    behind_tls = httpx.get(f"{service.url}/", headers={"X-Forwarded-Proto": "https"}, timeout=30)
    assert behind_tls.headers["strict-transport-security"] == "max-age=31536000"
    api = httpx.get(f"{service.url}/api/v1/submissions", headers={"X-Forwarded-Proto": "https"},
                    timeout=30)
    assert api.status_code == 401 and "strict-transport-security" in api.headers
    # plain HTTP: no
    assert "strict-transport-security" not in httpx.get(f"{service.url}/", timeout=30).headers


def test_the_dashboard_refreshes_only_when_asked_and_says_how_to_stop(service):
    staff = sign_in(service, "/dashboard/signin",
                    {"username": "prof", "password": INSTRUCTOR_PASSWORD})
    page = staff.get("/dashboard")
    assert page.status_code == 200 and not REFRESH.search(page.text)
    assert 'href="/dashboard?live=1"' in page.text
    live = staff.get("/dashboard?live=1")
    assert (
        '<meta http-equiv="refresh" content="10">' in live.text
        and 'href="/dashboard">stop updating' in live.text
    )


def test_a_pending_submissions_page_can_be_paused(service):
    student = sign_in(service, "/", {"token": service.tokens["s015"]})
    with service.client("s015") as client:
        queued = upload(client, EXAMPLES / "toy-correct.ipynb")
    assert queued.status_code == 202, queued.text
    path = f"/me/submissions/{queued.json()['id']}"
    page = student.get(path)
    if REFRESH.search(page.text):  # still pending (it may be graded already on a fast machine)
        assert 'href="?paused=1">stop updating' in page.text
    paused = student.get(f"{path}?paused=1")
    assert paused.status_code == 200 and not REFRESH.search(paused.text)

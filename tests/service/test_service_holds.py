"""Refusals answered from memory are held (issue 35: attackers who send again as soon as they are
answered cost the web process a core at a deadline). Through real HTTP against real server
processes: a sign-in past its limits, and an upload past the student's rate, are answered 429 only
after ``serve --hold-refusals`` (3 s by default); an upload's body waits unread meanwhile, and one
over 1 MB is never read (its connection closed with the answer, which the client still reads); what
is held at once is bounded per address and per student, the rest answered at once with their
connections closed; a classmate is not held up. Time is only ever bounded from below here."""
from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import httpx

from autograder.service.holds import HELD_PER_ADDRESS, HELD_PER_STUDENT, HOLD_SECONDS
from service_helpers import EXAMPLES, make_service, upload, wait_result
from test_service_sessions import _dashboard_attempt
from test_service_web import _cookies, _csrf

NOTEBOOK = EXAMPLES / "toy-correct.ipynb"


def _closed(answer: httpx.Response) -> bool:
    return answer.headers.get("connection", "").lower() == "close"


def _multipart(name: str, data: bytes) -> tuple[bytes, str]:
    """A multipart body with one file field ``notebook`` (sent whole by the test's own socket)."""
    boundary = "holdsboundary"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="notebook"; filename="{name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def _bytes_read(pid: int) -> int:
    """What the process has read through system calls (sockets included), /proc/PID/io's rchar."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError(f"/proc/{pid}/io has no rchar")


def test_a_guesser_past_the_limit_waits_for_each_answer_and_holds_few_connections(service):
    where = "10.4.0.1"
    for n in range(20):  # the address's limit: 20 a minute
        assert _dashboard_attempt(service, f"nobody{n}", "wrong", where).status_code == 401
    started = time.monotonic()
    refused = _dashboard_attempt(service, "prof", "still wrong", where)
    took = time.monotonic() - started
    assert refused.status_code == 429 and not _closed(refused), refused.headers
    retry = int(refused.headers["retry-after"])
    assert took >= min(retry, HOLD_SECONDS) - 0.05, (took, retry)

    # more at once than an address may have held: the rest are answered at once, and closed
    async def at_once(count: int) -> list[tuple[httpx.Response, float]]:
        limits = httpx.Limits(max_connections=count + 8)
        async with httpx.AsyncClient(base_url=service.url, timeout=120, limits=limits,
                                     headers={"X-Forwarded-For": where}) as client:
            form = await client.get("/dashboard/signin")
            fields = {"username": "prof", "password": "guess", "csrf": _csrf(form.text)}
            cookie = {"Cookie": f"autograder_csrf={_cookies(form)['autograder_csrf']}"}

            async def one():
                sent = time.monotonic()
                answer = await client.post("/dashboard/signin", data=fields, headers=cookie)
                return answer, time.monotonic() - sent

            return await asyncio.gather(*(one() for _ in range(count)))

    answers = asyncio.run(at_once(HELD_PER_ADDRESS + 16))
    assert [answer.status_code for answer, _ in answers] == [429] * (HELD_PER_ADDRESS + 16)
    held = [seconds for answer, seconds in answers if not _closed(answer)]
    closed = [answer for answer, _ in answers if _closed(answer)]
    assert len(held) <= HELD_PER_ADDRESS and closed, (len(held), len(closed))
    assert min(held) >= min(retry, HOLD_SECONDS) - 1.05  # Retry-After counted down meanwhile
    # another address is neither held nor refused
    assert _dashboard_attempt(service, "nobody", "wrong", "10.4.0.2").status_code == 401


def test_uploads_past_the_rate_are_held_unread_bounded_and_nobody_else_waits(tmp_path):
    server = make_service(tmp_path / "holds", "--workers", "1", "--rate", "2/hour")
    server.start()
    try:
        attacker, classmate = server.client("s001"), server.client("s002")
        for _ in range(2):  # two refused uploads: the rate of refusals (2/hour) is reached
            assert upload(attacker, content=b"not json", name="x.ipynb").status_code == 422

        # held: the 8 MB body is never read; the client still reads why
        body, kind = _multipart("big.ipynb", b"x" * (8 * 1024 * 1024))
        pid, before = server.process.pid, _bytes_read(server.process.pid)
        outcome: dict = {}

        def send():
            sent = time.monotonic()
            outcome["answer"] = attacker.post(
                "/api/v1/submissions", content=body, headers={"Content-Type": kind}
            )
            outcome["took"] = time.monotonic() - sent

        sender = threading.Thread(target=send)
        sender.start()
        # meanwhile a classmate is answered and graded as if nothing happened
        taken = upload(classmate, NOTEBOOK)
        assert taken.status_code == 202, taken.text
        time.sleep(HOLD_SECONDS / 2)
        during = _bytes_read(pid) - before
        sender.join(120)
        answer = outcome["answer"]
        assert answer.status_code == 429 and answer.json()["status"] == "rate_limited", answer.text
        assert outcome["took"] >= HOLD_SECONDS - 0.05 and _closed(answer), outcome
        assert during < 2 * 1024 * 1024, during  # 8 MB sent: at most uvicorn's buffer read
        assert _bytes_read(pid) - before < 2 * 1024 * 1024  # and nothing more once answered
        assert wait_result(classmate, taken.json()["id"])["score"] == 11

        # a notebook's size is drained after the hold and answered on a connection kept open
        started = time.monotonic()
        small = upload(attacker, NOTEBOOK)
        assert small.status_code == 429 and small.json()["status"] == "rate_limited"
        assert time.monotonic() - started >= HOLD_SECONDS - 0.05 and not _closed(small)

        # more at once than a student may have held: the rest answered at once, and closed
        data = NOTEBOOK.read_bytes()

        async def at_once(count: int) -> list[httpx.Response]:
            headers = {"Authorization": attacker.headers["Authorization"]}
            async with httpx.AsyncClient(base_url=server.url, timeout=120, headers=headers,
                                         limits=httpx.Limits(max_connections=count)) as client:
                return await asyncio.gather(*(
                    client.post("/api/v1/submissions", files={"notebook": ("t.ipynb", data)})
                    for _ in range(count)
                ))

        answers = asyncio.run(at_once(HELD_PER_STUDENT + 4))
        assert [a.status_code for a in answers] == [429] * (HELD_PER_STUDENT + 4)
        closed = [a for a in answers if _closed(a)]
        assert closed and len(answers) - len(closed) <= HELD_PER_STUDENT, [
            a.headers.get("connection") for a in answers
        ]
        assert all(a.json()["status"] == "rate_limited" for a in answers)
        attacker.close()
        classmate.close()
    finally:
        server.stop()


def test_hold_refusals_zero_answers_at_once(tmp_path):
    server = make_service(tmp_path / "no-holds", "--workers", "1", "--rate", "1/hour",
                          "--hold-refusals", "0")
    server.start()
    try:
        with server.client("s001") as client:
            assert upload(client, content=b"not json", name="x.ipynb").status_code == 422
            started = time.monotonic()
            answers = [upload(client, NOTEBOOK) for _ in range(HELD_PER_STUDENT + 2)]
            took = time.monotonic() - started
        # none held, none closed: each answered in turn on the same connection
        assert [a.status_code for a in answers] == [429] * (HELD_PER_STUDENT + 2)
        assert not any(_closed(a) for a in answers)
        assert took < len(answers) * HOLD_SECONDS / 2  # held, they would take 3 s each
    finally:
        server.stop()

"""The HTTP API against the real server: status codes, the one result per submission, the same
feedback page as the command line, and every refusal stores nothing for anyone."""
from __future__ import annotations

import json
import re
import select
import socket
import subprocess
import sys
import time

import nbformat
import pytest

from service_helpers import EXAMPLES, command, rows, upload, wait_result

TOY_PARTS = {"initialize", "pair_frequencies", "merge", "learn", "tokenize"}


def test_health_says_the_service_can_grade(service):
    answer = service.client().get("/health")
    assert answer.status_code == 200
    assert answer.json()["status"] == "ok" and answer.json()["graders"] == 2
    assert answer.json()["max_upload_bytes"] == 1024 * 1024


def test_a_submission_is_queued_then_graded_with_the_same_feedback_page_as_the_command_line(
    service, tmp_path
):
    notebook = EXAMPLES / "toy-merge-overlaps.ipynb"
    with service.client("s001") as client:
        queued = upload(client, content=notebook.read_bytes(), name="s001_toy_bpe.ipynb")
        assert queued.status_code == 202, queued.text
        body = queued.json()
        assert set(body) >= {"id", "status", "lab", "position"}
        assert body["status"] == "queued" and body["lab"] == "toy_bpe" and body["position"] >= 1
        result = wait_result(client, body["id"])
    assert result["status"] == "graded" and result["error"] is None
    assert result["score"] == 9 and result["max_score"] == 11
    assert result["parts"] == {
        "initialize": 2,
        "pair_frequencies": 2,
        "merge": 0,
        "learn": 3,
        "tokenize": 2,
    }
    # the command line on the same file, named so that it finds the same student and file name
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "s001_toy_bpe.ipynb").write_bytes(notebook.read_bytes())
    graded = command(
        "grade", str(folder), "--out", str(tmp_path / "out"), "--workers", "1", "--quiet"
    )
    assert graded.returncode == 0, graded.stderr
    cli_page = (tmp_path / "out" / "feedback" / "s001" / "toy_bpe.html").read_text(encoding="utf-8")
    assert result["feedback_html"] == cli_page


def test_the_list_holds_the_callers_own_submissions_newest_first(service):
    with service.client("s001") as client:
        second = upload(client, EXAMPLES / "ny-correct.ipynb")
        assert second.status_code == 202, second.text
        wait_result(client, second.json()["id"])
        listed = client.get("/api/v1/submissions").json()
    assert [item["id"] for item in listed] == sorted((item["id"] for item in listed), reverse=True)
    assert listed[0]["id"] == second.json()["id"] and len(listed) == 2
    assert all(item["lab"] in ("toy_bpe", "ny_constitution") for item in listed)
    with service.client("s010") as other:
        assert other.get("/api/v1/submissions").json() == []


def test_a_missing_wrong_or_revoked_token_gets_401(service):
    notebook = (EXAMPLES / "toy-correct.ipynb").read_bytes()
    before = rows(service)
    with service.client() as anonymous:
        assert upload(anonymous, content=notebook).status_code == 401
        assert anonymous.get("/api/v1/submissions").status_code == 401
    for token in (
        "nope",
        service.tokens["s007"] + "x",
        "x." + service.tokens["s007"].split(".")[1],
        "Bearer",
    ):
        with service.client(token=token) as wrong:
            answer = upload(wrong, content=notebook)
            assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
            assert "token" in answer.json()["detail"]
    revoked = command("tokens", "--db", str(service.db), "--revoke", "s009")
    assert revoked.returncode == 0, revoked.stderr
    with service.client("s009") as client:
        assert upload(client, content=notebook).status_code == 401
    assert rows(service) == before


def test_another_students_submission_is_404(service):
    with service.client("s001") as owner:
        mine = owner.get("/api/v1/submissions").json()[0]["id"]
        assert owner.get(f"/api/v1/submissions/{mine}").status_code == 200
    with service.client("s007") as other:
        for target in (mine, 999999, "1 OR 1=1", "-1"):
            answer = other.get(f"/api/v1/submissions/{target}")
            assert answer.status_code == 404, (target, answer.text)
            assert "feedback_html" not in answer.json()


def test_files_that_are_not_a_notebook_of_a_lab_get_422_with_the_command_lines_status_word(service):
    cases = {
        b"": "empty_file",
        b"{not json": "invalid_json",
        b'{"a": 1}': "not_a_notebook",
        nbformat.writes(
            nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
        ).encode(): "unknown_lab",
    }
    # a refused upload counts against the rate (3 an hour here): three students, at most 3 each
    for student, (content, word) in zip(("s014", "s014", "s014", "s011"), cases.items()):
        with service.client(student) as client:
            answer = upload(client, content=content)
            assert answer.status_code == 422, answer.text
            assert answer.json()["status"] == word and answer.json()["detail"]
    with service.client("s014") as client:
        refused = upload(client, content=nbformat.writes(nbformat.v4.new_notebook()).encode())
        assert refused.status_code == 429 and refused.json()["status"] == "rate_limited", (
            refused.text
        )
        assert "3 of your uploads were refused" in refused.json()["detail"]
    with service.client("s012") as client:
        no_field = client.post("/api/v1/submissions", files={"other": ("x.ipynb", b"{}")})
        assert no_field.status_code == 422 and no_field.json()["status"] == "no_notebook"
    assert rows(service, "s014") == rows(service, "s011") == []


def test_an_uploaded_pdf_is_named_a_pdf_as_the_command_line_names_it(service):
    """Issue 33 (8): the service called an uploaded PDF
    `invalid_json`, where the command line says what the file is."""
    with service.client("s007") as client:
        for name in ("toy_bpe.pdf", "toy_bpe.ipynb"):  # whatever the student called it
            answer = upload(client, content=b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n", name=name)
            assert answer.status_code == 422, answer.text
            assert answer.json()["status"] == "not_a_notebook", answer.text
            assert (
                "the file is a PDF, not a Jupyter notebook (.ipynb)" in answer.json()["detail"]
            ), answer.text
    assert rows(service, "s007") == []


def _raw_request(service, head: bytes, chunks=()) -> tuple[bytes, int]:
    """Send a request by hand; returns (the answer's
    first bytes, body bytes sent before it came)."""
    host, port = service.url.removeprefix("http://").split(":")
    sent = 0
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(head)
        for chunk in chunks:
            readable, _, _ = select.select([connection], [], [], 0)
            if readable:
                break
            try:
                connection.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(chunk)
        connection.settimeout(30)
        answer = connection.recv(4096)
        head_end = answer.find(b"\r\n\r\n")
        length = (
            re.search(rb"(?i)\r\ncontent-length: *(\d+)", answer[:head_end])
            if head_end >= 0
            else None
        )
        # the body may come in a later segment
        while length and len(answer) < head_end + 4 + int(length.group(1)):
            more = connection.recv(4096)
            if not more:
                break
            answer += more
        return answer, sent


def test_an_upload_over_the_cap_gets_413_before_the_body_is_read_or_while_it_streams(service):
    token = service.tokens["s007"].encode()
    head = (b"POST /api/v1/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
            b"\r\nContent-Type: multipart/form-data; boundary=b\r\n")
    # it says it is 50 MB: answered before a byte of the body is sent
    answer, _ = _raw_request(service, head + b"Content-Length: 52428800\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"clear the notebook's outputs" in answer
    # chunked, no length said: cut off near the cap (1 MB), never read whole (it would be 40 MB)
    piece = b"x" * 65536
    chunk = b"%x\r\n" % len(piece) + piece + b"\r\n"
    start = (
        b"--b\r\nContent-Disposition: form-data; name=\"notebook\"; filename=\"big.ipynb\"\r\n\r\n"
    )
    chunks = [b"%x\r\n" % len(start) + start + b"\r\n"] + [chunk] * 640
    answer, sent = _raw_request(service, head + b"Transfer-Encoding: chunked\r\n\r\n", chunks)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 8 * 1024 * 1024, f"{sent} bytes went in before the refusal"
    # an ordinary upload of 1.5 MB
    with service.client("s007") as client:
        notebook = nbformat.read(EXAMPLES / "toy-correct.ipynb", as_version=4)
        notebook.cells[-1].source += "\n# " + "x" * 1_500_000
        answer = upload(client, content=nbformat.writes(notebook).encode())
        assert answer.status_code == 413 and answer.json()["status"] == "file_too_large"
    assert rows(service, "s007") == []


def test_the_rate_limit_says_when_the_next_submission_is_allowed(service):
    with service.client("s002") as client:
        for _ in range(3):
            queued = upload(client, EXAMPLES / "toy-untouched.ipynb")
            assert queued.status_code == 202, queued.text
            assert wait_result(client, queued.json()["id"])["score"] == 0
        refused = upload(client, EXAMPLES / "toy-correct.ipynb")
        assert refused.status_code == 429
        wait = int(refused.headers["retry-after"])
        assert 3500 < wait <= 3600
        assert refused.json()["status"] == "rate_limited" and refused.json()["retry_after"] == wait
        assert "you can submit again at" in refused.json()["detail"]
        # another lab has its own count
        assert upload(client, EXAMPLES / "ny-untouched.ipynb").status_code == 202
    assert [lab for _, _, lab, *_ in rows(service, "s002")] == ["toy_bpe"] * 3 + ["ny_constitution"]


def test_one_submission_of_a_lab_at_a_time(service):
    with service.client("s003") as client:
        first = upload(client, EXAMPLES / "toy-correct.ipynb")
        second = upload(client, EXAMPLES / "toy-merge-overlaps.ipynb")
        assert first.status_code == 202
        assert second.status_code == 429 and second.json()["status"] == "one_at_a_time"
        assert (
            int(second.headers["retry-after"]) >= 2
            and f"#{first.json()['id']}" in second.json()["detail"]
        )
        wait_result(client, first.json()["id"])
        third = upload(client, EXAMPLES / "toy-merge-overlaps.ipynb")
        assert third.status_code == 202
        assert wait_result(client, third.json()["id"])["score"] == 9
    assert len(rows(service, "s003")) == 2


def test_deadlines_refuse_or_mark_late_submissions(service):
    with service.client("s004") as client:
        refused = upload(client, EXAMPLES / "gpt2-correct.ipynb")
        assert refused.status_code == 403 and refused.json()["status"] == "late"
        assert "2020-01-01 00:00:00 UTC" in refused.json()["detail"]
        late = upload(client, EXAMPLES / "ny-untouched.ipynb")
        assert late.status_code == 202 and late.json()["late"] is True
        on_time = upload(client, EXAMPLES / "toy-untouched.ipynb")
        assert on_time.status_code == 202 and on_time.json()["late"] is False
        assert wait_result(client, late.json()["id"])["late"] is True
        wait_result(client, on_time.json()["id"])
    assert [lab for _, _, lab, *_ in rows(service, "s004")] == ["ny_constitution", "toy_bpe"]


def test_student_strings_are_escaped_in_json_and_html(service):
    notebook = nbformat.read(EXAMPLES / "toy-correct.ipynb", as_version=4)
    for cell in notebook.cells:  # the notebook's own check prints what the function returned
        if cell.get("id") == "initialize_solution":
            cell.source = ('def bpe_initialize(dataset):\n'
                           '    return [["</pre><script>alert(1)</script>"]], []\n')
    name = "<img src=x onerror=alert(1)>.ipynb"
    with service.client("s010") as client:
        queued = upload(client, content=nbformat.writes(notebook).encode(), name=name)
        assert queued.status_code == 202, queued.text
        result = wait_result(client, queued.json()["id"])
    assert result["file_name"] == name  # kept as it is in JSON (a string, not markup)...
    assert "<script>alert(1)</script>" in result["feedback"][0]["visible_check"]
    assert "<script>alert(1)</script>" not in result["feedback_html"]  # ...and escaped in HTML
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in result["feedback_html"]
    assert "<img src=x" not in result["feedback_html"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in result["feedback_html"]
    assert json.loads(json.dumps(result)) == result


def test_the_openapi_description_lists_the_api(service):
    paths = service.client().get("/openapi.json").json()["paths"]
    assert {"/api/v1/submissions", "/api/v1/submissions/{submission_id}", "/health"} <= set(paths)


def test_plain_http_on_an_address_other_than_loopback_is_refused(tmp_path):
    started = time.monotonic()
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "serve",
            "--db",
            str(tmp_path / "x.db"),
            "--host",
            "0.0.0.0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2
    assert (
        refused.stderr.startswith("error: refusing to serve plain HTTP on 0.0.0.0")
        and "Traceback" not in refused.stderr
    )
    assert refused.stderr.count("\n") == 1 and time.monotonic() - started < 60
    assert not (tmp_path / "x.db").exists()


def test_a_notebook_cannot_read_the_service_database(service):
    """The kernel boundary of ``grade`` holds for the service's own
    files: a notebook that reads the database (through Python and through
    libc) sees nothing of it, and its result is graded as usual."""
    from autograder.kernel.session import isolation_status

    if not isolation_status().startswith("landlock"):
        pytest.skip(
            f"kernels cannot be isolated here ({isolation_status()}): the fence does not stop libc"
        )
    notebook = nbformat.read(EXAMPLES / "toy-correct.ipynb", as_version=4)
    spy = nbformat.v4.new_code_cell(f"""
import ctypes
found = []
for path in ({str(service.db)!r}, {str(service.db) + '-wal'!r}):
    try:
        found.append(open(path, "rb").read(16))
    except OSError as error:
        found.append(type(error).__name__)
    libc = ctypes.CDLL(None)
    descriptor = libc.open(path.encode(), 0)
    found.append(descriptor)
    if descriptor >= 0:
        buffer = ctypes.create_string_buffer(16)
        libc.read(descriptor, buffer, 16)
        found.append(buffer.raw)
raise RuntimeError("found: " + repr(found))
""")
    position = next(
        index
        for index, cell in enumerate(notebook.cells)
        if cell.get("id") == "initialize_solution"
    )
    notebook.cells.insert(position + 1, spy)
    with service.client("s013") as client:
        queued = upload(client, content=nbformat.writes(notebook).encode(), name="spy.ipynb")
        assert queued.status_code == 202, queued.text
        result = wait_result(client, queued.json()["id"])
    assert result["status"] == "graded" and result["score"] == 11
    (said,) = [cell["error"] for cell in result["cells"] if cell["kind"] == "added"]
    assert "found: [" in said, said
    assert "SQLite" not in said and "b'" not in said, said  # no bytes of it were read
    assert said.count("-1") == 2, said  # libc's open failed on both files

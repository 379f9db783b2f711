"""LTI 1.3 on loopback: a report (figures only, no pass/fail).

A real platform (lti1p3platform, ``tests/service/lti_platform.py``) and the real service (``serve
--lti``). ``--students`` students each open the assignment from the LMS (the OIDC login, the signed
launch, the session: measured from the platform's start address to the student's page) and hand in
the toy lab; the report gives p50 and p95 of a launch, and of the delay from a result recorded (the
server's ``finished_at``) to the score received by the LMS gradebook (AGS).

    .venv/bin/python benchmarks/bench_lti.py                 # 20 students
    .venv/bin/python benchmarks/bench_lti.py --students 50
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "service"))

from lti_platform import LEARNER, Platform  # noqa: E402
from service_helpers import EXAMPLES, make_service  # noqa: E402
from lti_browser import Browser  # noqa: E402


def percentiles(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    return (f"p50 {statistics.median(values):.3f} s, p95 {p95:.3f} s, max {values[-1]:.3f} s "
            f"(n={len(values)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    students = [f"s{number:03d}" for number in range(1, args.students + 1)]
    with tempfile.TemporaryDirectory(prefix="bench-lti-") as scratch:
        folder = Path(scratch)
        server = make_service(folder, "--workers", str(args.workers), "--rate", "0",
                              students=students)
        subprocess.run([sys.executable, "-m", "autograder", "lti-keys", str(folder / "keys")],
                       check=True, capture_output=True)
        platform = Platform(server.url)
        platform.start()
        (folder / "lti.json").write_text(json.dumps({platform.registration.get_iss(): [{
            "client_id": platform.registration.get_client_id(),
            "auth_login_url": f"{platform.url}/authorize",
            "auth_token_url": f"{platform.url}/token", "key_set_url": f"{platform.url}/jwks",
            "private_key_file": "keys/lti-private.pem", "public_key_file": "keys/lti-public.pem",
            "deployment_ids": ["deployment-1"]}]}), encoding="utf-8")
        server.args += ["--lti", str(folder / "lti.json"), "--public-url", server.url]
        for student in students:
            platform.add_user(f"lms-{student}", f"Student {student}", f"{student}@example.edu",
                              [LEARNER])
        link = platform.add_link({"lab": "toy_bpe"}, score_maximum=11)
        server.start()
        try:
            launches, handed = [], {}
            notebook = (EXAMPLES / "toy-correct.ipynb").read_bytes()
            for student in students:
                browser = Browser()
                started = time.perf_counter()
                page = browser.submit(browser.go("GET",
                                                 platform.launch_url(link, f"lms-{student}")))
                launches.append(time.perf_counter() - started)
                assert urlsplit(str(page.url)).path == "/me", page.text[:500]
                csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
                answer = browser.go("POST", f"{server.url}/me/submissions", data={"csrf": csrf},
                                    files={"notebook": ("toy_bpe.ipynb", notebook)})
                handed[f"lms-{student}"] = int(urlsplit(str(answer.url)).path.rsplit("/", 1)[-1])
            deadline = time.monotonic() + 60 + 30 * len(students)
            while (
                len(platform.scores.get(link.lineitem_id, {})) < len(students)
                and time.monotonic() < deadline
            ):
                time.sleep(0.2)
            received = {user: moment for (lineitem, user), moment in platform.received_at.items()
                        if lineitem == link.lineitem_id}
            with sqlite3.connect(server.db) as db:
                finished = dict(db.execute("SELECT id, finished_at FROM submissions").fetchall())
            delays = [
                received[user]
                - datetime.fromisoformat(finished[number]).replace(tzinfo=timezone.utc).timestamp()
                for user, number in handed.items()
                if user in received
            ]
            print(f"LTI on loopback, {len(students)} students, {args.workers} grading processes")
            print("  launch (platform's start -> the student's page, OIDC login and signed "
                  f"launch): {percentiles(launches)}")
            print(f"  result recorded -> score in the LMS gradebook (AGS): {percentiles(delays)}")
            print(f"  scores received: {len(received)} of {len(students)}")
        finally:
            server.stop()
            platform.stop()


if __name__ == "__main__":
    main()

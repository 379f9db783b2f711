"""Load and latency of the grading service on loopback: a report (figures only, no pass/fail).

1. Empty queue: notebooks submitted one at a time; for each, the time from the POST to the result
   the client reads, against that notebook's own grading time (``grading_seconds``).
2. Load: ``--students`` simulated students each submit ``--attempts`` times (a different lab each
   time) at random moments within ``--window`` seconds, through a bounded asyncio client; each then
   polls for its results. Nothing may be lost: every submission must end with exactly one result.
   Prints p50 and p95 from submission to result (the server's own timestamps) and the throughput.
3. The command line (``bpe-labs grade``) on the same files with the same number of workers.

The simulated students share the 2 cores with the server; real students' browsers and notebooks do
not. So the client runs at a lower priority (``nice`` 10, after the server has started) and prints
the CPU time it used; the command line in part 3 inherits that priority but runs alone.

    .venv/bin/python benchmarks/bench_service.py                      # 300 students x 3 within 5 minutes
    .venv/bin/python benchmarks/bench_service.py --students 30 --window 30   # a quick look
"""
from __future__ import annotations

import argparse
import asyncio
import csv
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "submissions"
LABS = {"toy_bpe": "toy", "gpt2_bpe": "gpt2", "ny_constitution": "ny"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def autograder(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], check=True, capture_output=True, text=True, **kwargs)


def examples_of(prefix: str) -> list[Path]:
    """The lab's example submissions that get graded (not the untouched one)."""
    return sorted(path for path in EXAMPLES.glob(f"{prefix}-*.ipynb") if not path.stem.endswith("untouched"))


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def moment(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def call(client: httpx.AsyncClient, method: str, path: str, outcome: dict, **kwargs) -> httpx.Response:
    """The request, sent again after a transport error (a keep-alive connection the server had just closed)."""
    for attempt in range(5):
        try:
            return await client.request(method, path, **kwargs)
        except httpx.TransportError as error:
            outcome["retried"].append(type(error).__name__)
            await asyncio.sleep(0.5 * (attempt + 1))
    return await client.request(method, path, **kwargs)


async def student(client: httpx.AsyncClient, token: str, plan: list[tuple[float, Path]], started: float, outcome: dict,
                  poll: float) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    ids = []
    for at, path in plan:
        await asyncio.sleep(max(0.0, started + at - time.monotonic()))
        while True:
            answer = await call(client, "POST", "/api/v1/submissions", outcome, headers=headers,
                                files={"notebook": (path.name, path.read_bytes())})
            if answer.status_code == 202:
                ids.append(answer.json()["id"])
                outcome["sent"].append(path)
                break
            if answer.status_code == 429:
                await asyncio.sleep(float(answer.headers.get("retry-after", "5")))
                continue
            outcome["refused"].append((path.name, answer.status_code, answer.text[:200]))
            break
    waiting = set(ids)
    while waiting:
        await asyncio.sleep(poll)
        listed = await call(client, "GET", "/api/v1/submissions", outcome, headers=headers)
        if listed.status_code != 200:
            continue
        for item in listed.json():
            if item["id"] in waiting and item["status"] in ("graded", "error"):
                waiting.discard(item["id"])
                outcome["results"].append(item)


async def load(url: str, tokens: dict[str, str], plans: dict[str, list], poll: float, connections: int) -> tuple[dict, float]:
    outcome = {"sent": [], "refused": [], "results": [], "retried": []}
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        started = time.monotonic()
        await asyncio.gather(*(student(client, tokens[name], plan, started, outcome, poll) for name, plan in plans.items()))
    return outcome, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--attempts", type=int, default=3)
    parser.add_argument("--window", type=float, default=300, help="seconds within which every submission is sent")
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1), help="grading processes, service and CLI alike")
    parser.add_argument("--empty", type=int, default=9, help="notebooks submitted one at a time into an empty queue")
    parser.add_argument("--poll", type=float, default=4.0, help="seconds between a student's looks at their results")
    parser.add_argument("--connections", type=int, default=64, help="HTTP connections the load client keeps at most")
    parser.add_argument("--no-cli", action="store_true", help="skip grading the same files with bpe-labs grade")
    parser.add_argument("--cli-only", action="store_true",
                        help="only part 3: grade with bpe-labs grade the files a full run with these options sends")
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    labs = list(LABS)
    files = {lab: examples_of(prefix) for lab, prefix in LABS.items()}
    rng = random.Random(args.seed)
    # the load's plan has a generator of its own: --cli-only grades exactly the files a full run sends
    plan_rng = random.Random(args.seed)
    names = [f"u{number:04d}" for number in range(args.students + 1)]
    plans, every_file = {}, []
    for name in names[1:]:
        chosen = plan_rng.sample(labs, k=min(args.attempts, len(labs))) if args.attempts <= len(labs) else \
            [labs[k % len(labs)] for k in range(args.attempts)]
        plan = sorted((plan_rng.uniform(0, args.window), plan_rng.choice(files[lab])) for lab in chosen)
        plans[name] = plan
        every_file += [(name, lab_path) for _, lab_path in plan]
    folder = Path(tempfile.mkdtemp(prefix="bench-service-"))
    (folder / "roster.csv").write_text("student_id\n" + "\n".join(names) + "\n", encoding="utf-8")
    service_rate = None
    if not args.cli_only:
        db = folder / "service.db"
        autograder("tokens", "--roster", str(folder / "roster.csv"), "--db", str(db), "--out", str(folder / "tokens.csv"))
        tokens = {row["student_id"]: row["token"] for row in csv.DictReader(open(folder / "tokens.csv", encoding="utf-8"))}
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = open(folder / "server.log", "w", encoding="utf-8")
        server = subprocess.Popen([sys.executable, "-m", "autograder", "serve", "--db", str(db), "--port", str(port),
                                   "--workers", str(args.workers), "--rate", "0", "--log-level", "warning"],
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            print(f"server on {url}: {args.workers} grading processes; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}")

            # 1. an empty queue, one notebook at a time
            quiet = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tokens[names[0]]}"}, timeout=120)
            overheads, rounds = [], []
            for index in range(args.empty):
                lab = labs[index % len(labs)]
                path = files[lab][0 if index < len(labs) else rng.randrange(len(files[lab]))]
                sent = time.monotonic()
                number = quiet.post("/api/v1/submissions", files={"notebook": (path.name, path.read_bytes())}).json()["id"]
                while (result := quiet.get(f"/api/v1/submissions/{number}").json())["status"] not in ("graded", "error"):
                    time.sleep(0.05)
                seen = time.monotonic() - sent
                rounds.append(seen)
                overheads.append(seen - result["grading_seconds"])
                print(f"  empty queue: {path.stem:28s} grading {result['grading_seconds']:5.2f} s, submit to feedback {seen:5.2f} s "
                      f"(+{seen - result['grading_seconds']:.2f} s)")
            print(f"empty queue ({args.empty} notebooks): submit to feedback p50 {statistics.median(rounds):.2f} s, "
                  f"p50 over the notebook's own grading time +{statistics.median(overheads):.2f} s "
                  f"(p95 +{percentile(overheads, 0.95):.2f} s)")

            os.nice(10)  # the simulated students yield the cores to the server they load (see the docstring)
            client_cpu = time.process_time()
            # 2. load: students x attempts at random moments within the window, each a different lab
            print(f"load: {args.students} students x {args.attempts} submissions within {args.window:g} s "
                  f"({len(every_file)} notebooks) ...", flush=True)
            outcome, took = asyncio.run(load(url, tokens, plans, args.poll, args.connections))
            results = outcome["results"]
            ids = [item["id"] for item in results]
            waits = [moment(item["graded_at"]) - moment(item["submitted_at"]) for item in results]
            first = min(moment(item["submitted_at"]) for item in results)
            last = max(moment(item["graded_at"]) for item in results)
            service_rate = len(results) / (last - first)
            graded = sum(item["status"] == "graded" for item in results)
            print(f"load: {len(outcome['sent'])} accepted, {len(outcome['refused'])} refused, {len(results)} results "
                  f"({graded} graded, {len(results) - graded} errors), {len(ids) - len(set(ids))} duplicates; "
                  f"lost: {len(outcome['sent']) - len(set(ids))}; requests sent again after a transport error: "
                  f"{len(outcome['retried'])}")
            print(f"load: submit to result p50 {statistics.median(waits):.1f} s, p95 {percentile(waits, 0.95):.1f} s, "
                  f"max {max(waits):.1f} s; {took:.0f} s in all")
            # minute by minute: a steady rate while the queue is full; a dip is the machine's other load
            minutes = [0] * (int((last - first) // 60) + 1)
            for item in results:
                minutes[int((moment(item["graded_at"]) - first) // 60)] += 1
            print(f"results per minute from the first submission: {' '.join(map(str, minutes))}")
            print(f"service throughput: {service_rate:.2f} notebooks/s (first submission to last result); "
                  f"the simulated students used {time.process_time() - client_cpu:.0f} s of CPU")
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)

    # 3. the command line on the same files
    if not args.no_cli:
        batch = folder / "batch"
        batch.mkdir()
        for index, (name, path) in enumerate(every_file):
            (batch / f"{name}_{index}_{path.name}").write_bytes(path.read_bytes())
        started = time.monotonic()
        autograder("grade", str(batch), "--out", str(folder / "out"), "--workers", str(args.workers), "--quiet")
        took = time.monotonic() - started
        cli_rate = len(every_file) / took
        print(f"bpe-labs grade on the same {len(every_file)} files, --workers {args.workers}: {took:.0f} s, "
              f"{cli_rate:.2f} notebooks/s")
        if service_rate is not None:
            print(f"service / command line throughput: {service_rate / cli_rate:.2f}")
    print(f"(files and the server's log in {folder}; load {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Load and latency of the grading service on loopback: a report (figures only, no pass/fail).

1. Empty queue: notebooks submitted one at a time; for each, the time from the POST to the result
   the client reads, against that notebook's own grading time (``grading_seconds``).
2. Load: ``--students`` simulated students each submit ``--attempts`` times (a different lab each
   time) at random moments within ``--window`` seconds, through a bounded asyncio client; each then
   polls for its results. Nothing may be lost: every submission must end with exactly one result.
   Prints p50 and p95 from submission to result (the server's own timestamps) and the throughput.
3. The command line (``bpe-labs grade``) on the same files with the same number of workers.

``--attackers N`` adds N students who attack the service during part 2 (issue 35), all at once:
each sends a 19.5 MB notebook of nested empty lists three times at once (finding 1), keeps a
sleeping notebook waiting in every lab, sending another each time one ends (finding 2), and guesses
the instructor's password on the dashboard's sign-in form (finding 7). The report then gives the
honest students' p50 and p95 separately, whether any honest job was lost or charged an error, and
the web process's peak memory (the kernel's high-water mark). Compare a run with ``--attackers 0``.

The simulated students share the 2 cores with the server; real students' browsers and notebooks do
not. So the client runs at a lower priority (``nice`` 10, after the server has started) and prints
the CPU time it used; the command line in part 3 inherits that priority but runs alone. The
attackers run in a process of their own at ``nice`` 19 (their machines are not the server's, and
their coroutines would otherwise delay the honest students' in one event loop); its CPU time is
printed apart.

    .venv/bin/python benchmarks/bench_service.py             # 300 students x 3 within 5 minutes
    .venv/bin/python benchmarks/bench_service.py --students 30 --window 30   # a quick look
    .venv/bin/python benchmarks/bench_service.py --no-cli --attackers 10     # with 10 attackers
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
import nbformat
import psutil

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "submissions"
LABS = {"toy_bpe": "toy", "gpt2_bpe": "gpt2", "ny_constitution": "ny"}
# every lab, for the attackers' sleeping notebooks (one pending job per lab)
ATTACKED = ["toy", "gpt2", "ny", "africa", "fast", "prep", "tok"]

sys.path.insert(0, str(ROOT / "tests" / "service"))
from web_process import MB, peak_rss, reset_peak  # noqa: E402  (shared with the service's tests)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def autograder(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        check=True,
        capture_output=True,
        text=True,
        **kwargs,
    )


def examples_of(prefix: str) -> list[Path]:
    """The lab's example submissions that get graded (not the untouched one)."""
    return sorted(
        path for path in EXAMPLES.glob(f"{prefix}-*.ipynb") if not path.stem.endswith("untouched")
    )


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def moment(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


async def call(
    client: httpx.AsyncClient, method: str, path: str, outcome: dict, **kwargs
) -> httpx.Response:
    """The request, sent again after a transport error (a
    keep-alive connection the server had just closed)."""
    for attempt in range(5):
        try:
            return await client.request(method, path, **kwargs)
        except httpx.TransportError as error:
            outcome["retried"].append(type(error).__name__)
            await asyncio.sleep(0.5 * (attempt + 1))
    return await client.request(method, path, **kwargs)


async def student(
    client: httpx.AsyncClient,
    token: str,
    plan: list[tuple[float, Path]],
    started: float,
    outcome: dict,
    poll: float,
) -> None:
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


def nested_empty_lists(size: int) -> bytes:
    """Finding 1's upload: nested empty lists, under the 20 MB cap."""
    head, tail, unit = b'{"cells": [', b"[]]}", b"[[[]],[]],"
    return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail


def sleeping(path: Path, seconds: float) -> bytes:
    """Finding 2's notebook: a lab's notebook with added
    cells that sleep (a slot held at no CPU cost)."""
    nb = nbformat.read(path, as_version=4)
    for index in range(1, 12):
        nb.cells.insert(index, nbformat.v4.new_code_cell(f"import time\ntime.sleep({seconds})"))
    return nbformat.writes(nb).encode()


async def attacker(
    client: httpx.AsyncClient, token: str, until: float, outcome: dict, sleep: float
) -> None:
    """Findings 1, 2 and 7 at once, until ``until`` (monotonic)."""
    headers = {"Authorization": f"Bearer {token}"}
    bomb = nested_empty_lists(int(19.5 * MB))
    notebooks = {prefix: sleeping(examples_of(prefix)[0], sleep) for prefix in ATTACKED}

    async def one_bomb() -> str:
        try:  # past the rate, the server answers and closes the connection unread
            answer = await client.post("/api/v1/submissions", headers=headers,
                                       files={"notebook": ("lists.ipynb", bomb)})
            return f"bomb {answer.status_code}"
        except httpx.TransportError:
            return "bomb closed"

    async def bombs():
        while time.monotonic() < until:
            outcome["attacks"].extend(await asyncio.gather(*(one_bomb() for _ in range(3))))
            await asyncio.sleep(5)

    async def sleepers():
        while time.monotonic() < until:  # one pending job per lab: send again what is taken
            for prefix, data in notebooks.items():
                answer = await call(client, "POST", "/api/v1/submissions", outcome, headers=headers,
                                    files={"notebook": (f"{prefix}.ipynb", data)})
                outcome["attacks"].append(f"sleeper {answer.status_code}")
            await asyncio.sleep(10)

    async def guesses():
        while time.monotonic() < until:
            try:
                form = await client.get("/dashboard/signin")
                csrf = form.cookies.get("autograder_csrf", "")
                field = (
                    form.text.split('name="csrf" value="')[1].split('"')[0]
                    if 'name="csrf"' in form.text
                    else ""
                )
                answer = await client.post(
                    "/dashboard/signin",
                    data={"username": "prof", "password": f"guess{random.random()}", "csrf": field},
                    headers={"Cookie": f"autograder_csrf={csrf}"},
                )
                outcome["attacks"].append(f"guess {answer.status_code}")
            except httpx.HTTPError as error:
                outcome["attacks"].append(f"guess {type(error).__name__}")
            await asyncio.sleep(0.2)

    await asyncio.gather(bombs(), sleepers(), guesses())


def attacking(url: str, tokens: list[str], seconds: float, sleep: float, answer) -> None:
    """The attackers' process (nice 19): every attacker at once for ``seconds``; sends back what
    each attack got, and the CPU time it used."""
    os.nice(19)
    outcome: dict = {"attacks": [], "retried": []}

    async def all_of_them():
        async with httpx.AsyncClient(base_url=url, timeout=300) as hostile:
            until = time.monotonic() + seconds
            await asyncio.gather(*(attacker(hostile, token, until, outcome, sleep)
                                   for token in tokens))

    asyncio.run(all_of_them())
    answer.send((outcome["attacks"], time.process_time()))


async def load(
    url: str,
    tokens: dict[str, str],
    plans: dict[str, list],
    poll: float,
    connections: int,
    attackers: list[str] = (),
    attack_seconds: float = 0,
    sleep: float = 55,
) -> tuple[dict, float]:
    outcome = {"sent": [], "refused": [], "results": [], "retried": [], "attacks": [],
               "attackers_cpu": 0.0}
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    hostile = None
    if attackers:
        import multiprocessing

        context = multiprocessing.get_context("fork")
        answer, sent_back = context.Pipe(duplex=False)
        hostile = context.Process(
            target=attacking,
            args=(url, [tokens[name] for name in attackers], attack_seconds, sleep, sent_back),
        )
        hostile.start()
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        started = time.monotonic()
        await asyncio.gather(
            *(
                student(client, tokens[name], plan, started, outcome, poll)
                for name, plan in plans.items()
            ),
        )
    if hostile is not None:
        outcome["attacks"], outcome["attackers_cpu"] = await asyncio.to_thread(answer.recv)
        hostile.join()
    return outcome, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--attempts", type=int, default=3)
    parser.add_argument(
        "--window", type=float, default=300, help="seconds within which every submission is sent"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=2 * (os.cpu_count() or 1),
        help="grading processes, service and CLI alike",
    )
    parser.add_argument(
        "--empty", type=int, default=9, help="notebooks submitted one at a time into an empty queue"
    )
    parser.add_argument(
        "--poll", type=float, default=4.0, help="seconds between a student's looks at their results"
    )
    parser.add_argument(
        "--connections", type=int, default=64, help="HTTP connections the load client keeps at most"
    )
    parser.add_argument(
        "--no-cli", action="store_true", help="skip grading the same files with bpe-labs grade"
    )
    parser.add_argument(
        "--cli-only",
        action="store_true",
        help="only part 3: grade with bpe-labs grade the files a full run with these options sends",
    )
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument(
        "--rate", default="10/hour", help="the server's --rate (refused uploads count against it)"
    )
    parser.add_argument(
        "--attackers",
        type=int,
        default=0,
        help="students attacking the service during the load (issue 35)",
    )
    parser.add_argument(
        "--attack-sleep",
        type=float,
        default=55,
        help="seconds each of an attacker's added cells sleeps (just under the cell limit)",
    )
    args = parser.parse_args()
    labs = list(LABS)
    files = {lab: examples_of(prefix) for lab, prefix in LABS.items()}
    rng = random.Random(args.seed)
    # the load's plan has a generator of its own:
    # --cli-only grades exactly the files a full run sends
    plan_rng = random.Random(args.seed)
    names = [f"u{number:04d}" for number in range(args.students + 1)]
    attackers = [f"a{number:03d}" for number in range(args.attackers)]
    plans, every_file = {}, []
    for name in names[1:]:
        chosen = (
            plan_rng.sample(labs, k=min(args.attempts, len(labs)))
            if args.attempts <= len(labs)
            else [labs[k % len(labs)] for k in range(args.attempts)]
        )
        plan = sorted(
            (plan_rng.uniform(0, args.window), plan_rng.choice(files[lab])) for lab in chosen
        )
        plans[name] = plan
        every_file += [(name, lab_path) for _, lab_path in plan]
    folder = Path(tempfile.mkdtemp(prefix="bench-service-"))
    (folder / "roster.csv").write_text(
        "student_id\n" + "\n".join(names + attackers) + "\n", encoding="utf-8"
    )
    service_rate = None
    if not args.cli_only:
        db = folder / "service.db"
        autograder(
            "tokens",
            "--roster",
            str(folder / "roster.csv"),
            "--db",
            str(db),
            "--out",
            str(folder / "tokens.csv"),
        )
        autograder(
            "accounts", "add", "prof", "--role", "instructor", "--db", str(db), "--random-password"
        )
        tokens = {
            row["student_id"]: row["token"]
            for row in csv.DictReader(open(folder / "tokens.csv", encoding="utf-8"))
        }
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = open(folder / "server.log", "w", encoding="utf-8")
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "autograder",
                "serve",
                "--db",
                str(db),
                "--port",
                str(port),
                "--workers",
                str(args.workers),
                "--rate",
                args.rate,
                "--log-level",
                "warning",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            print(
                f"server on {url}: {args.workers} grading processes; {os.cpu_count()} cores; load "
                f"{os.getloadavg()[0]:.1f}"
            )
            reset_peak(server.pid)  # the peak of what follows, not of the start-up

            # 1. an empty queue, one notebook at a time
            quiet = httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {tokens[names[0]]}"}, timeout=120
            )
            overheads, rounds = [], []
            for index in range(args.empty):
                lab = labs[index % len(labs)]
                path = files[lab][0 if index < len(labs) else rng.randrange(len(files[lab]))]
                sent = time.monotonic()
                number = quiet.post(
                    "/api/v1/submissions", files={"notebook": (path.name, path.read_bytes())}
                ).json()["id"]
                while (result := quiet.get(f"/api/v1/submissions/{number}").json())[
                    "status"
                ] not in ("graded", "error"):
                    time.sleep(0.05)
                seen = time.monotonic() - sent
                rounds.append(seen)
                overheads.append(seen - result["grading_seconds"])
                print(
                    f"  empty queue: {path.stem:28s} grading {result['grading_seconds']:5.2f} s, "
                    f"submit to feedback {seen:5.2f} s "
                    f"(+{seen - result['grading_seconds']:.2f} s)"
                )
            if rounds:  # --empty 0 skips part 1
                print(
                    f"empty queue ({args.empty} notebooks): submit to feedback p50 "
                    f"{statistics.median(rounds):.2f} s, "
                    "p50 over the notebook's own grading time "
                    f"+{statistics.median(overheads):.2f} s "
                    f"(p95 +{percentile(overheads, 0.95):.2f} s)"
                )

            # the simulated students yield the cores to the server they load (see the docstring)
            os.nice(10)
            client_cpu = time.process_time()
            web = psutil.Process(server.pid)
            web_cpu = sum(web.cpu_times()[:2])
            # 2. load: students x attempts at random moments within the window, each a different lab
            print(
                f"load: {args.students} students x {args.attempts} submissions within "
                f"{args.window:g} s "
                f"({len(every_file)} notebooks), {len(attackers)} attackers ...",
                flush=True,
            )
            outcome, took = asyncio.run(
                load(
                    url,
                    tokens,
                    plans,
                    args.poll,
                    args.connections,
                    attackers,
                    args.window,
                    args.attack_sleep,
                )
            )
            peak = peak_rss(server.pid)
            # where the cores went: the web process (intake, attacks) against the gradings
            web_cpu = sum(web.cpu_times()[:2]) - web_cpu
            results = outcome["results"]
            ids = [item["id"] for item in results]
            waits = [moment(item["graded_at"]) - moment(item["submitted_at"]) for item in results]
            first = min(moment(item["submitted_at"]) for item in results)
            last = max(moment(item["graded_at"]) for item in results)
            service_rate = len(results) / (last - first)
            graded = sum(item["status"] == "graded" for item in results)
            print(
                f"load: {len(outcome['sent'])} accepted, {len(outcome['refused'])} refused, "
                f"{len(results)} results "
                f"({graded} graded, {len(results) - graded} errors), {len(ids) - len(set(ids))} "
                "duplicates; "
                f"lost: {len(outcome['sent']) - len(set(ids))}; requests sent again after a "
                "transport error: "
                f"{len(outcome['retried'])}"
            )
            print(
                f"load: submit to result p50 {statistics.median(waits):.1f} s, p95 "
                f"{percentile(waits, 0.95):.1f} s, "
                f"max {max(waits):.1f} s; {took:.0f} s in all"
            )
            # minute by minute: a steady rate while the queue
            # is full; a dip is the machine's other load
            minutes = [0] * (int((last - first) // 60) + 1)
            for item in results:
                minutes[int((moment(item["graded_at"]) - first) // 60)] += 1
            print(f"results per minute from the first submission: {' '.join(map(str, minutes))}")
            print(
                f"service throughput: {service_rate:.2f} notebooks/s (first submission to last "
                "result); "
                f"the simulated students used {time.process_time() - client_cpu:.0f} s of CPU"
            )
            print(
                f"web process CPU during the load {web_cpu:.0f} s; an honest notebook's grading "
                f"p50 {statistics.median(item['grading_seconds'] or 0 for item in results):.2f} s;"
                f" load {os.getloadavg()[0]:.1f}"
            )
            errors = [item for item in results if item["status"] != "graded"]
            print(
                f"honest students: {len(results)} results of {len(outcome['sent'])} accepted, "
                f"{len(errors)} charged with an "
                f"error{': ' + errors[0]['error'][:200] if errors else ''}; "
                f"web process peak memory {peak / MB:.0f} MB"
            )
            if attackers:
                kinds: dict[str, int] = {}
                for attack in outcome["attacks"]:
                    kinds[attack] = kinds.get(attack, 0) + 1
                print(
                    f"attacks ({len(attackers)} attackers, nice 19, "
                    f"{outcome['attackers_cpu']:.0f} s of CPU): "
                    f"{', '.join(f'{k} x{v}' for k, v in sorted(kinds.items()))}"
                )
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
        autograder(
            "grade",
            str(batch),
            "--out",
            str(folder / "out"),
            "--workers",
            str(args.workers),
            "--quiet",
        )
        took = time.monotonic() - started
        cli_rate = len(every_file) / took
        print(
            f"bpe-labs grade on the same {len(every_file)} files, --workers {args.workers}: "
            f"{took:.0f} s, "
            f"{cli_rate:.2f} notebooks/s"
        )
        if service_rate is not None:
            print(f"service / command line throughput: {service_rate / cli_rate:.2f}")
    print(f"(files and the server's log in {folder}; load {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

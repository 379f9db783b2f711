"""What the kernel boundary costs: seconds per notebook with the boundary and with the fence, per
lab.

For each lab, ``--count`` copies of its correct example submission are graded by the real CLI
(``python -m autograder grade --workers W --quiet``, process start included), once with the
boundary (the default where Landlock works) and once with ``AUTOGRADER_ISOLATION=fence``, in
alternating order over ``--repeat`` rounds (best of). It prints seconds per notebook, the extra
cost of the boundary in percent, and whether both modes gave the same scores. It reports and
never asserts: the machine may be shared, so it prints the load too. The issue's target is
under 10% extra.

    .venv/bin/python benchmarks/bench_isolation.py      # every lab, 10 notebooks each
    .venv/bin/python benchmarks/bench_isolation.py --labs toy_bpe --count 20 --repeat 3
"""
from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.fair import why_not_comparable  # noqa: E402
EXAMPLES = REPO / "examples" / "submissions"
CORRECT = {"toy_bpe": "toy-correct", "africa_galore": "africa-correct",
           "ny_constitution": "ny-correct",
           "gpt2_bpe": "gpt2-correct", "corpus_prep": "prep-correct", "fast_bpe": "fast-correct"}


def grade(folder: Path, out: Path, workers: int, fence: bool) -> tuple[float, dict[str, str]]:
    env = dict(os.environ,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    if fence:
        env["AUTOGRADER_ISOLATION"] = "fence"
    else:
        env.pop("AUTOGRADER_ISOLATION", None)
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(out),
                    "--workers", str(workers),
                    "--quiet"], check=True, env=env, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    with open(out / "grades.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return seconds, {row["student_id"]: (row["status"], row["score"], row.get("isolation", "?"))
                     for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", nargs="*", default=list(CORRECT))
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1))
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}; {args.count} notebooks per lab, "
          f"{args.workers} workers, best of {args.repeat}")
    print(f"{'lab':<16} {'boundary s/nb':>13} {'fence s/nb':>10} {'extra':>7}  same scores  "
          "isolation")
    with tempfile.TemporaryDirectory(prefix="bench-isolation-") as tmp:
        tmp = Path(tmp)
        for lab in args.labs:
            folder = tmp / lab
            folder.mkdir()
            for index in range(args.count):
                shutil.copy(EXAMPLES / f"{CORRECT[lab]}.ipynb",
                            folder / f"s{index:03d}_{lab}.ipynb")
            best = {True: float("inf"), False: float("inf")}
            scores = {}
            for _ in range(args.repeat):
                for fence in (False, True):
                    seconds, scores[fence] = grade(folder, tmp / f"out-{lab}", args.workers, fence)
                    best[fence] = min(best[fence], seconds)
            fence_totals = {k: float(v[1]) for k, v in scores[True].items() if v[0] == "graded"}
            why_not = why_not_comparable(scores[False], fence_totals) or why_not_comparable(
                scores[True]
            )
            same = why_not is None
            isolation = sorted({v[2] for v in scores[False].values()})
            on, off = best[False] / args.count, best[True] / args.count
            # fair.py: never for unequal runs
            extra = f"{100 * (on / off - 1):.1f}%" if same else f"none: {why_not}"
            print(f"{lab:<16} {on:>13.2f} {off:>10.2f} {extra:>7s}  {str(same):<11}  "
                  f"{', '.join(isolation)}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

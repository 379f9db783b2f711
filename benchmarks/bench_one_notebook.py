"""One notebook from the command line: how long does it take next to its own grading time?

A report, not a test: it prints figures and asserts nothing about them.

    python benchmarks/bench_one_notebook.py                 # every lab, best of 1
    python benchmarks/bench_one_notebook.py --labs toy africa --repeat 3

For each lab, ``examples/submissions/<lab>-correct.ipynb`` is copied alone into an empty
folder and graded as an instructor would, in a new process:

    python -m autograder grade FOLDER --out OUT --workers 1 --quiet

with a fresh OUT each time (a new gradebook, no results to resume from). Columns:

* ``grading s``: the result's own ``seconds`` (``results/*.json``): from the moment the
  grading process takes the file to its result (kernel start, the student's cells, hidden
  tests, kernel shutdown);
* ``CLI s``: wall time of the whole command, from starting Python to its exit;
* ``ratio``: CLI s / grading s (the goal: 2 or less);
* ``rest s``: CLI s - grading s, what start-up, the gradebook and the reports add;
* ``cpu s``: CPU time of the command and every process it waited for.

The run with the smallest ``CLI s`` of ``--repeat`` is shown. The machine may be shared: the
load average is printed before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
EXAMPLES = REPO / "examples" / "submissions"

from autograder.batch.resume import unsigned  # noqa: E402
from benchmarks.fair import ratio, why_not_comparable  # noqa: E402
# examples/submissions/<name>-correct.ipynb
LABS = ["toy", "africa", "ny", "gpt2", "prep", "fast", "tok"]


def grade_alone(notebook: Path, scratch: Path) -> dict:
    """Grade ``notebook`` alone from the command line; its grading seconds, wall and CPU seconds."""
    folder, out = scratch / "submissions", scratch / "out"
    shutil.rmtree(scratch, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy(notebook, folder / notebook.name)
    environment = dict(os.environ, PYTHONPATH=str(REPO))
    command = [sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(out),
               "--workers", "1", "--quiet"]
    before = os.times()
    started = time.perf_counter()
    finished = subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = os.times()
    if finished.returncode != 0:
        raise RuntimeError(f"grading {notebook.name} failed "
                           f"({finished.returncode}):\n{finished.stderr[-2000:]}")
    (result_file,) = (out / "results").glob("*.json")
    result = unsigned(json.loads(result_file.read_text(encoding="utf-8")))
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return {"status": result.status, "score": result.score, "grading": result.seconds, "cli": wall,
            "cpu": cpu}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", nargs="+", default=LABS, choices=LABS)
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per lab; the fastest end to end is shown")
    args = parser.parse_args(argv)

    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; best of {args.repeat}; "
          f"python -m autograder grade FOLDER --workers 1")
    header = (f"{'notebook':<22} {'status':>7} {'score':>6} {'grading s':>10} {'CLI s':>7} "
              f"{'ratio':>6} {'rest s':>7} {'cpu s':>6}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as scratch:
        for lab in args.labs:
            notebook = EXAMPLES / f"{lab}-correct.ipynb"
            runs = [grade_alone(notebook, Path(scratch) / lab) for _ in range(args.repeat)]
            best = min(runs, key=lambda run: run["cli"])
            why_not = why_not_comparable({notebook.stem: (best["status"], best["score"])})
            # fair.py: none for a file that did not grade
            cell = ratio(best["cli"], best["grading"], why_not, form="{:.2f}")
            score = f"{best['score']:g}" if best["score"] is not None else "-"
            print(f"{notebook.name:<22} {best['status']:>7} {score:>6} {best['grading']:>10.2f} "
                  f"{best['cli']:>7.2f} "
                  f"{cell:>6} {best['cli'] - best['grading']:>7.2f} {best['cpu']:>6.2f}",
                  flush=True)
    print(f"load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

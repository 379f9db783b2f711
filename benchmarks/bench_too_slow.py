"""How long does grading take to decide "too slow"? A report: it asserts nothing.

Grades, one at a time and alone (``--workers 0``), the bundled example submissions whose mistake is
speed: ``fast-recounts`` (fast_bpe: the trainer recounts every pair after each merge),
``tok-train-every-pretoken`` (lab 7: train_bpe walks every pre-token at every merge) and
``tok-encode-learned-order`` (lab 7: encode makes one pass over the text per merge), beside each
lab's correct example. Prints each notebook's wall-clock time from the command line, its score and
its timed parts' messages, and the load average.

    .venv/bin/python benchmarks/bench_too_slow.py
    .venv/bin/python benchmarks/bench_too_slow.py --examples fast-recounts
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

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["fast-recounts", "fast-correct", "tok-train-every-pretoken", "tok-encode-learned-order",
            "tok-correct"]


def grade_alone(name: str, folder: Path) -> tuple[float, dict]:
    submissions, out = folder / name / "in", folder / name / "out"
    submissions.mkdir(parents=True)
    shutil.copy(REPO / "examples" / "submissions" / f"{name}.ipynb", submissions)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "autograder", "grade", str(submissions), "--out",
                    str(out), "--workers", "0",
                    "--quiet"], check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return seconds, next(csv.DictReader(handle))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", nargs="+", default=EXAMPLES)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for name in args.examples:
            load = os.getloadavg()[0]
            seconds, row = grade_alone(name, Path(folder))
            print(f"{name:>26}: {seconds:6.1f} s (load {load:.2f} at start, "
                  f"{os.getloadavg()[0]:.2f} at end), score {row['score']} of {row['max_score']}")


if __name__ == "__main__":
    main()

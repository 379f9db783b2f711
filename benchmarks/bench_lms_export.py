"""What exporting to an LMS and preparing formgrader cost, on a graded folder and on a class scaled
up.

A report, not a test: it prints figures and asserts nothing about them.

    python benchmarks/bench_lms_export.py                     # on make demo's out/ (56 notebooks)
    python benchmarks/bench_lms_export.py --out OUT --scale 10 # every result copied to 10 students

Figures:

* ``formgrader layout``: writing ``autograded/`` notebooks for every graded result into a fresh
  copy of OUT (what ``grade`` adds after the last notebook; each submission is read and repaired
  again), then again when all are current (what a resumed ``grade`` or an ``export`` adds);
* ``results + gradebook``: reading ``results/*.json`` (checksums checked) and the gradebook's
  changes made by hand;
* ``sheet + <format>``: matching the results to a roster (one student per result, ``--scale``
  copies of every result under new names) and building each format's rows and files.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed(label: str, function, *args, **kwargs):
    started = time.perf_counter()
    value = function(*args, **kwargs)
    print(f"{label:<42} {time.perf_counter() - started:8.2f} s")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "out",
                        help="a graded folder (default: make demo's out/)")
    parser.add_argument("--scale", type=int, default=6,
                        help="copies of each result, as that many students (default 6)")
    args = parser.parse_args()

    from autograder.course import use

    use("bpe_labs.course:COURSE")
    from autograder.reports import formgrader
    from autograder.labs import all_labs
    from autograder.lms import canvas, moodle
    from autograder.lms.command import csv_bytes, zip_bytes
    from autograder.grading.roster import RosterEntry
    from autograder.lms.sheet import build
    from autograder.lms.source import OutFolder

    if not (args.out / "results").is_dir():
        sys.exit(f"{args.out} has no results/: run make demo first, or pass --out OUT")
    print(f"load average {os.getloadavg()[0]:.2f}; {args.out}")
    all_labs()  # read once, as grade has them by then
    results = timed("results + gradebook", OutFolder(args.out).results)
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "out"
        shutil.copytree(args.out, copy, ignore=shutil.ignore_patterns("autograded", "feedback"))
        graded = sum(r.graded for r in results)
        timed(f"formgrader layout, {graded} notebooks written", formgrader.write_course, copy,
              results)
        timed(f"formgrader layout, {graded} notebooks current", formgrader.write_course, copy,
              results)

    class_ = [replace(r, student_id=f"{r.student_id}-{n}") for n in range(args.scale)
              for r in results]
    roster = [RosterEntry(student_id=r.student_id, name=r.student_id,
                          email=f"{r.student_id}@example.edu",
                          canvas_id=str(1000 + i), user_id=str(5000 + i))
              for i, r in enumerate(class_)]
    print(f"a class of {len(roster)} students, {sum(r.graded for r in class_)} graded results")
    mapping = {lab: str(100 + i) for i, lab in enumerate(all_labs())}
    sheet = timed("sheet (all labs)", build, class_, roster, mapping)
    rows, _ = timed("canvas rows", canvas.table, sheet)
    timed(f"canvas CSV ({len(rows)} rows)", csv_bytes, rows)
    rows, _ = timed("moodle gradebook rows, with feedback", moodle.gradebook_table, sheet, "email",
                    True)
    timed(f"moodle CSV ({len(rows)} rows)", csv_bytes, rows)
    one = build(class_, roster, {"toy_bpe": ""})
    rows, files, _ = timed("moodle worksheet + feedback pages (toy_bpe)", moodle.worksheet, one)
    data = timed(f"feedback zip ({len(files)} files)", zip_bytes, files)
    print(f"feedback zip: {len(data) / 1024:.0f} KiB; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

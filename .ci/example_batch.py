"""One grading batch for CI on another Python: per lab, the correct example
submission and one with a planted bug, graded through ``python -m autograder
grade``; each part must get exactly the points its ``examples/<lab>.yaml`` expects.

Usage: python .ci/example_batch.py OUT_DIR   (from the repository root; exit status 1 on a mismatch)
"""
import csv
import shutil
import subprocess
import sys
from pathlib import Path

from bpe_labs import ROOT as REPO_ROOT
from bpe_labs.examples import load_cases
from autograder.labs import get_lab


def pick_cases() -> list[dict]:
    """Per lab, its first full-score case and its first case with some points but not all."""
    picked = []
    for lab_id in dict.fromkeys(case["lab"] for case in load_cases()):
        cases = [case for case in load_cases() if case["lab"] == lab_id]
        max_score = get_lab(lab_id).max_score
        full = next(case for case in cases if sum(case["expected"].values()) == max_score)
        partial = next(case for case in cases if 0 < sum(case["expected"].values()) < max_score)
        picked += [full, partial]
    return picked


def mismatches(cases: list[dict], grades_csv: Path) -> list[str]:
    with open(grades_csv, newline="", encoding="utf-8") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    problems = [f"{case['id']}: no row in grades.csv" for case in cases if case["id"] not in rows]
    for case in cases:
        row = rows.get(case["id"])
        if row is None:
            continue
        got = {part: float(row[part] or "nan") for part in case["expected"]}
        want = {part: float(points) for part, points in case["expected"].items()}
        if row["status"] != "graded" or got != want:
            problems.append(
                f"{case['id']}: status {row['status']}, points {got}, expected {want} "
                f"{row['error']}"
            )
    return problems


def main(out_dir: Path) -> int:
    cases = pick_cases()
    submissions = out_dir / "submissions"
    shutil.rmtree(out_dir, ignore_errors=True)
    submissions.mkdir(parents=True)
    for case in cases:
        shutil.copy(REPO_ROOT / "examples" / "submissions" / f"{case['id']}.ipynb", submissions)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(submissions),
            "--out",
            str(out_dir / "graded"),
            "--quiet",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    problems = mismatches(cases, out_dir / "graded" / "grades.csv")
    for problem in problems:
        print(f"example batch: {problem}", file=sys.stderr)
    print(
        f"example batch: {len(cases) - len(problems)} of {len(cases)} notebooks got exactly their "
        "expected points"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))

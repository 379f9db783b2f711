"""What plain nbgrader 0.9.6 makes of the adversarial suite, next to what our autograder makes of
it.

Plain nbgrader runs the hidden tests inside the student's kernel and scores a test cell by whether
its output holds an error, so a student's code can reach the tests, the reference and the
solutions. This script grades every case of ``tests/adversarial.py`` both ways, with the same
limits (cell timeout, memory cap), and prints a markdown table: case, plain nbgrader's score (or
what happened), ours, and the score the case should get.

It is a report: it prints, never asserts. It takes a few minutes (nbgrader is run once per case,
so that each case's failure is its own).

    .venv/bin/python benchmarks/compare_with_nbgrader.py [--cases ID ...] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from adversarial import CASES, LAB, correct_notebook  # noqa: E402
from autograder.batch.run import grade_folder  # noqa: E402
from autograder.grading.grade import Settings  # noqa: E402
from autograder.kernel.session import Limits  # noqa: E402

CELL_SECONDS = 10
MEMORY_BYTES = 3 * 1024**3
VENV_BIN = Path(sys.executable).parent
NBGRADER = str(VENV_BIN / "nbgrader")

CONFIG = """\
c = get_config()
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = {db!r}
c.Execute.timeout = {timeout}
"""


def _limit_memory():
    # The same cap as our kernels get; the kernel nbgrader starts inherits it.
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def run_nbgrader(
    args: list[str], course: Path, timeout: float = 300
) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO),
               PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
               BPE_LABS_DATA=str(REPO / "data" / "standins"), MPLBACKEND="Agg")
    return subprocess.run([NBGRADER, *args], cwd=course, env=env, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=_limit_memory)


def what_went_wrong(log: str) -> str:
    """The exception nbgrader ended on (the last line of its
    traceback), else its first error, in a few words."""
    raised = re.findall(r"^\s*((?:[\w.]+\.)?\w+(?:Error|Exception|Exit|Interrupt)\b(?::.*)?)$", log,
                        re.M)
    if raised:
        return _short(raised[-1])
    for line in log.splitlines():
        match = re.search(r"\[AutogradeApp \| (ERROR|CRITICAL)\] (.*)", line)
        if (
            match
            and "There was an error processing" not in match.group(2)
            and "Traceback" not in match.group(2)
        ):
            return match.group(2).strip()[:90]
    return "failed (no error logged)"


def _short(line: str) -> str:
    """``nbformat.reader.NotJSONError: Notebook does ...`` -> ``NotJSONError: Notebook does ...``"""
    name, _, message = line.strip().partition(":")
    return f"{name.rsplit('.', 1)[-1]}: {message.strip()}"[:90].rstrip(": ")


def nbgrader_scores(course: Path, db_url: str, students: list[str]) -> dict[str, dict]:
    from nbgrader.api import Gradebook, MissingEntry

    found = {}
    with Gradebook(db_url) as gradebook:
        for student in students:
            try:
                notebook = gradebook.find_submission_notebook(LAB, LAB, student)
            except MissingEntry:
                continue
            found[student] = {"score": notebook.score,
                              "parts": {grade.name: grade.score for grade in notebook.grades}}
    return found


def grade_with_nbgrader(files: dict[str, bytes], work: Path) -> dict[str, str]:
    """Case id -> what plain nbgrader gave: the score, or what happened."""
    course = work / "course"
    (course / "source" / LAB).mkdir(parents=True)
    shutil.copy(REPO / "solutions" / f"{LAB}.ipynb", course / "source" / LAB / f"{LAB}.ipynb")
    db_url = f"sqlite:///{course / 'gradebook.db'}"
    (course / "nbgrader_config.py").write_text(CONFIG.format(root=str(course), db=db_url,
                                                             timeout=CELL_SECONDS))
    made = run_nbgrader(["generate_assignment", LAB, "--force"], course)
    if made.returncode != 0:
        raise SystemExit(f"nbgrader generate_assignment failed:\n{made.stdout}\n{made.stderr}")
    outcome = {}
    for case_id, content in files.items():
        target = course / "submitted" / case_id / LAB / f"{LAB}.ipynb"
        target.parent.mkdir(parents=True)
        target.write_bytes(content)
        run_nbgrader(["db", "student", "add", case_id], course)
        started = time.monotonic()
        try:
            done = run_nbgrader(["autograde", LAB, "--student", case_id, "--force"], course)
            log, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired:
            log, code = "timed out", -1
        seconds = time.monotonic() - started
        scores = nbgrader_scores(course, db_url, [case_id]).get(case_id)
        if scores is not None and code == 0:
            outcome[case_id] = f"{scores['score']:g}"
        elif scores is not None:
            outcome[case_id] = f"{scores['score']:g} (exit {code}: {what_went_wrong(log)})"
        else:
            outcome[case_id] = f"not graded: {what_went_wrong(log)}"
        print(f"  nbgrader {case_id}: {outcome[case_id]} ({seconds:.1f} s)", file=sys.stderr)
    return outcome


def grade_with_ours(files: dict[str, bytes], names: dict[str, str], work: Path) -> dict[str, str]:
    folder = work / "ours" / "submissions"
    folder.mkdir(parents=True)
    for case_id, content in files.items():
        (folder / names[case_id]).write_bytes(content)
    settings = Settings(
        limits=Limits(cell_seconds=CELL_SECONDS, call_seconds=5, memory_bytes=MEMORY_BYTES),
        part_seconds=30,
    )
    results = grade_folder(folder, work / "ours" / "out", settings, workers=2, progress=False)
    by_name = {Path(result.file).name: result for result in results}
    shown = {}
    for case_id, name in names.items():
        result = by_name[name]
        if result.graded:
            shown[case_id] = f"{result.score:g}" + ("" if result.lab == LAB else f" ({result.lab})")
        else:
            shown[case_id] = result.status
    return shown


def expected(case) -> str:
    if case.status != "graded":
        return case.status
    return f"{case.total:g}" + ("" if case.lab == LAB else f" ({case.lab})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", help="case ids (default: all)")
    parser.add_argument("--keep", type=Path,
                        help="keep the work folder here (default: a temporary one, removed)")
    args = parser.parse_args()
    cases = [case for case in CASES if not args.cases or case.case_id in args.cases]
    work = Path(tempfile.mkdtemp(prefix="compare-nbgrader-")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    try:
        files = {case.case_id: case.build(correct_notebook()) for case in cases}
        started = time.monotonic()
        plain = grade_with_nbgrader(files, work)
        plain_seconds = time.monotonic() - started
        started = time.monotonic()
        ours = grade_with_ours(files, {case.case_id: case.file for case in cases}, work)
        our_seconds = time.monotonic() - started
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    full = sum(part.points
               for part in __import__("autograder.labs", fromlist=["get_lab"]).get_lab(LAB).parts)
    print(f"Out of {full:g} points. Same limits both ways: {CELL_SECONDS} s per cell, "
          f"{MEMORY_BYTES // 1024**3} GiB per kernel.\n")
    print("| case | what it does | plain nbgrader 0.9.6 | ours | should get |")
    print("|---|---|---|---|---|")
    for case in cases:
        print(f"| {case.case_id} | {case.description.replace('|', '/')} | {plain[case.case_id]} | "
              f"{ours[case.case_id]} | {expected(case)} |")
    print(f"\nnbgrader: {plain_seconds:.0f} s (one `nbgrader autograde` per case); ours: "
          f"{our_seconds:.0f} s (one batch, 2 workers).")


if __name__ == "__main__":
    main()

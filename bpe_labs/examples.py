"""Example submissions, generated from the student notebooks and ``examples/<lab_id>.yaml``.

A case fills each answer cell of the released notebook with the solution's code (``fill:
solution``) or leaves it untouched (``fill: none``), then applies exact text replacements that
plant a realistic bug. Its ``expected`` points per part are what the tests assert.
"""
from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat
import yaml

from autograder.labs import get_lab, nbgrader_meta
from bpe_labs import ROOT

EXAMPLES_DIR = ROOT / "examples"
SOLUTION_MARKER = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.M)


def load_cases(examples_dir: Path = EXAMPLES_DIR) -> list[dict]:
    """Every case of every ``examples/*.yaml``, each with its ``lab``."""
    cases = []
    for spec_path in sorted(Path(examples_dir).glob("*.yaml")):
        spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
        for case in spec["cases"]:
            cases.append({**case, "lab": spec["lab"], "spec": spec_path.name})
    return cases


def answer_code(solution_source: str) -> str:
    """What a student who got it right writes: the solution cell without nbgrader's markers."""
    return SOLUTION_MARKER.sub("", solution_source)


def make_submission(case: dict) -> nbformat.NotebookNode:
    lab = get_lab(case["lab"])
    nb = copy.deepcopy(lab.release_notebook())
    if case.get("fill", "solution") == "none":
        return nb
    solutions = {nbgrader_meta(c).get("grade_id"): c.source for c in lab.solution_notebook().cells}
    replacements = case.get("replace") or {}
    unknown = set(replacements) - set(solutions)
    if unknown:
        raise ValueError(f"{case['spec']} case {case['id']}: no cells {sorted(unknown)} in "
                         f"{lab.lab_id}")
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if not meta.get("solution"):
            continue
        source = answer_code(solutions[meta["grade_id"]])
        for change in replacements.get(meta["grade_id"], []):
            if change["old"] not in source:
                raise ValueError(f"{case['spec']} case {case['id']}: {change['old']!r} is not in "
                                 f"{meta['grade_id']}")
            source = source.replace(change["old"], change["new"])
        cell.source = source
    return nb


def write_examples(out_dir: Path = EXAMPLES_DIR / "submissions") -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for case in load_cases():
        path = out_dir / f"{case['id']}.ipynb"
        nbformat.write(make_submission(case), path)
        written.append(path)
    return written + [write_roster(out_dir.parent / "roster.csv")]


# Two students on the roster who handed nothing in: `grade --roster` gives them `missing` rows and
# the LMS exports leave their cells empty (docs/LMS.md).
ABSENT = [("dee-absent", "Dee Absent"), ("eve-absent", "Eve Absent")]


def write_roster(path: Path = EXAMPLES_DIR / "roster.csv") -> Path:
    """The examples' roster (``grade --roster``'s format, with the LMS columns of docs/LMS.md):
    one student per example case, whose id is the case's, and two students who handed nothing in;
    as ``make serve``, ``grade examples/submissions --roster examples/roster.csv`` and ``export``
    use it."""
    import csv

    students = [(case["id"], case["id"]) for case in load_cases()] + ABSENT
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["student_id", "name", "email", "username", "idnumber", "user_id",
                         "canvas_id", "sis_user_id", "sis_login_id", "section"])
        for number, (student_id, name) in enumerate(students, start=1):
            writer.writerow([student_id, name, f"{student_id}@example.edu", student_id,
                             f"S{number:04d}",
                             700 + number, 1000 + number, f"SIS{number:04d}", student_id,
                             f"Section {'AB'[number % 2 == 0]}"])
    return path

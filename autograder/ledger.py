"""The rows of an OUT folder: everything its gradebook holds, whichever batch put it there.

One OUT folder is meant to serve a whole term: lab 1's folder graded into it in week 2, lab 2's in
week 4, a late file on its own later. Its gradebook keeps every graded submission, so ``grades.csv``
and the class report do too. After a batch they hold:

* every row of this batch (one per entry of its folder);
* every earlier graded result stored in ``OUT/results/`` (signed by this grader: resume.py) whose file
  is not in this batch, unless this batch graded the same student's same lab again (then the gradebook
  holds the new score, and so does the table): a file removed from the folder keeps its row and its
  score, as it keeps them in the gradebook. An earlier file that was not graded is not in the gradebook,
  and its row goes when the file is no longer in the folder;
* with a roster, a ``missing`` row for every roster student who has no row for a lab this batch grades.

To start afresh (a new term, or to take a grade out), grade into a new ``--out`` folder.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from autograder.identity import Roster
from autograder.result import GRADED, MISSING, GradeResult
from autograder.resume import authentic


class Rows(list):
    """The rows ``grades.csv`` holds (a list of results), and where they came from."""

    def __init__(self, rows=(), folder: Path | None = None, this_batch: int = 0, earlier: int = 0, missing: int = 0,
                 note: str = ""):
        super().__init__(rows)
        self.folder, self.this_batch, self.earlier, self.missing, self.note = folder, this_batch, earlier, missing, note
        self.reported: Rows | list = self  # the rows as grades.csv shows them: with formgrader's changes, if any

    def holding(self, rows) -> "Rows":
        """The same folder and counts, holding ``rows`` (these rows, changed by hand in the gradebook)."""
        return Rows(rows, self.folder, self.this_batch, self.earlier, self.missing, self.note)


def stored_results(results_dir: Path, key: bytes) -> dict[str, GradeResult]:
    """Result file name -> result, for every result file in ``results_dir`` that this grader signed."""
    stored = {}
    for path in sorted(Path(results_dir).glob("*.json")) if Path(results_dir).is_dir() else []:
        try:
            result = authentic(json.loads(path.read_text(encoding="utf-8")), key)
        except (OSError, ValueError):
            result = None
        if result is not None:
            stored[path.name] = result
    return stored


def earlier_rows(stored: dict[str, GradeResult], this_batch_files: set[str], regraded: set[tuple[str, str]]) -> list[GradeResult]:
    """The graded results of earlier batches, which the gradebook still holds: their file (result file
    name) is not in this batch, and this batch did not grade their student's lab again."""
    return [result for name, result in stored.items() if result.status == GRADED
            and name not in this_batch_files and (result.student_id, result.lab) not in regraded]


def missing_rows(roster: Roster | None, lab_ids: list[str], rows: list[GradeResult], folder: Path) -> list[GradeResult]:
    """A ``missing`` row for each roster student and lab of ``lab_ids`` that no row names."""
    if roster is None:
        return []
    covered = {(row.student_id, row.lab) for row in rows}
    others = defaultdict(list)
    for row in rows:
        if row.lab is None:
            others[row.student_id].append(f"{Path(row.file).name} ({row.status})")
    missing = []
    for lab_id in lab_ids:
        for student in roster.students():
            if (student, lab_id) in covered:
                continue
            message = f"no notebook of this student for {lab_id} in {folder}"
            if others[student]:
                message += f"; what they handed in: {', '.join(others[student])}"
            missing.append(GradeResult(student, "", status=MISSING, message=message, lab=lab_id))
    return missing


def all_rows(batch: list[GradeResult], stored: dict[str, GradeResult], this_batch_files: set[str],
             roster: Roster | None, lab_ids: list[str], folder: Path, note: str = "") -> Rows:
    """This batch's rows, the earlier ones the gradebook still holds, and the missing students' rows."""
    regraded = {(row.student_id, row.lab) for row in batch if row.status == GRADED}
    earlier = earlier_rows(stored, this_batch_files, regraded)
    missing = missing_rows(roster, lab_ids, batch + earlier, folder)
    return Rows(batch + earlier + missing, folder=folder, this_batch=len(batch), earlier=len(earlier),
                missing=len(missing), note=note)

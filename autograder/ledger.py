"""The rows of an OUT folder: everything its gradebook holds, whichever batch put it there.

One OUT folder is meant to serve a whole term: lab 1's folder graded into it in week 2, lab 2's in
week 4, a late file on its own later. Its gradebook keeps every graded submission, so ``grades.csv``
and the class report do too. After a batch they hold:

* every row of this batch (one per entry of its folder);
* every earlier graded result stored in ``OUT/results/`` (signed by this grader: resume.py) whose
  file is not in this batch, unless this batch graded the same student's same lab again (then the
  gradebook holds the new score, and so does the table): a file removed from the folder keeps its
  row and its score, as it keeps them in the gradebook. An earlier file that was not graded is not
  in the gradebook, and its row goes when the file is no longer in the folder. Of two earlier
  results of one student's lab (a file graded again under another name, the first then removed), the
  one kept last is the one the gradebook holds, and the only one reported;
* with a roster, a ``missing`` row for every roster student who has no row for a lab this batch
  grades.

To start afresh (a new term, or to take a grade out), grade into a new ``--out`` folder.

``grade`` keeps these rows, signed, in ``OUT/rows.json`` (:func:`keep_rows`) before it writes
``grades.csv`` from them; ``export`` reads them back (:func:`kept_rows`), so that ``grades.csv``,
the class report and the LMS files it writes hold exactly the rows ``grade`` reported: never an
earlier result the ledger left out, and every ``missing`` row.
"""
from __future__ import annotations

import hmac
import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path

from autograder.identity import Roster
from autograder.result import GRADED, MISSING, GradeResult, MalformedResult
from autograder.resume import CHECKSUM, authentic, sign

ROWS_FILE = "rows.json"  # beside grades.csv: the rows grade reported, which export reports again


class Rows(list):
    """The rows ``grades.csv`` holds (a list of results), and where they came from."""

    def __init__(
        self,
        rows=(),
        folder: Path | None = None,
        this_batch: int = 0,
        earlier: int = 0,
        missing: int = 0,
        note: str = "",
    ):
        super().__init__(rows)
        self.folder, self.this_batch, self.earlier, self.missing, self.note = (
            folder,
            this_batch,
            earlier,
            missing,
            note,
        )
        # the rows as grades.csv shows them: with formgrader's changes, if any
        self.reported: Rows | list = self

    def holding(self, rows) -> "Rows":
        """The same folder and counts, holding ``rows`` (these rows, changed by hand in the
        gradebook)."""
        return Rows(rows, self.folder, self.this_batch, self.earlier, self.missing, self.note)


def _kept_order(path: Path) -> tuple[int, str]:
    try:
        return path.stat().st_mtime_ns, path.name
    except OSError:
        return 0, path.name


def stored_results(results_dir: Path, key: bytes) -> dict[str, GradeResult]:
    """Result file name -> result, for every result file in ``results_dir`` that this grader signed,
    in the order they were kept (the last one written last)."""
    stored = {}
    paths = (
        sorted(Path(results_dir).glob("*.json"), key=_kept_order)
        if Path(results_dir).is_dir()
        else []
    )
    for path in paths:
        try:
            result = authentic(json.loads(path.read_text(encoding="utf-8")), key)
        except (OSError, ValueError):
            result = None
        if result is not None:
            stored[path.name] = result
    return stored


def earlier_rows(
    stored: dict[str, GradeResult],
    this_batch_files: set[str],
    regraded: set[tuple[str, str | None]],
) -> list[GradeResult]:
    """The graded results of earlier batches, which the gradebook still holds: their file (result
    file name) is not in this batch, and this batch did not grade their student's lab again. Of
    several for one student's lab, the last kept (``stored`` is in that order): the gradebook holds
    that one."""
    latest: dict[tuple[str, str | None], GradeResult] = {}
    for name, result in stored.items():
        if (
            result.status == GRADED
            and name not in this_batch_files
            and (result.student_id, result.lab) not in regraded
        ):
            # re-inserted: the order stays the order kept
            latest.pop((result.student_id, result.lab), None)
            latest[(result.student_id, result.lab)] = result
    return list(latest.values())


def missing_rows(
    roster: Roster | None, lab_ids: list[str], rows: list[GradeResult], folder: Path
) -> list[GradeResult]:
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
    """This batch's rows, the earlier ones the gradebook still holds, and the missing students'
    rows."""
    regraded = {(row.student_id, row.lab) for row in batch if row.status == GRADED}
    earlier = earlier_rows(stored, this_batch_files, regraded)
    missing = missing_rows(roster, lab_ids, batch + earlier, folder)
    return Rows(
        batch + earlier + missing,
        folder=folder,
        this_batch=len(batch),
        earlier=len(earlier),
        missing=len(missing),
        note=note,
    )


def keep_rows(rows: Rows, out_dir: Path, key: bytes) -> None:
    """``OUT/rows.json``: ``rows`` (the autograder's own results, before any change made in
    formgrader) and their counts, signed with the grader's key, written whole or not at all."""
    data = sign(
        {
            "rows": [row.to_json() for row in rows],
            "this_batch": rows.this_batch,
            "earlier": rows.earlier,
            "missing": rows.missing,
            "folder": None if rows.folder is None else str(rows.folder),
            "note": rows.note,
        },
        key,
    )
    out_dir = Path(out_dir)
    with tempfile.NamedTemporaryFile(
        "w", dir=out_dir, prefix=f".{ROWS_FILE}.", delete=False, encoding="utf-8"
    ) as handle:
        json.dump(data, handle)
    os.replace(handle.name, out_dir / ROWS_FILE)


def kept_rows(out_dir: Path, key: bytes | None) -> Rows | None:
    """The rows ``grade`` last reported in ``out_dir`` (None if it kept none: an older version's
    OUT). Raises ``ValueError`` for a file that is not such rows or, with ``key``, one not signed
    with it (changed since ``grade`` wrote it, or written on another machine)."""
    path = Path(out_dir) / ROWS_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
            raise MalformedResult("expected an object with a list of rows")
        if key is not None:
            expected = sign({k: v for k, v in data.items() if k != CHECKSUM}, key)[CHECKSUM]
            if not hmac.compare_digest(
                expected.encode(), str(data.get(CHECKSUM)).encode("utf-8", "replace")
            ):
                raise ValueError(
                    f"{path} does not carry the checksum grade gave it: it was changed after "
                    "grading, or graded on another machine (grade again, or set "
                    "AUTOGRADER_RESUME_KEY to the grading machine's key)"
                )
        rows = [GradeResult.from_json(row) for row in data["rows"]]
        folder = data.get("folder")
        return Rows(
            rows,
            folder=None if folder is None else Path(folder),
            this_batch=int(data.get("this_batch", 0)),
            earlier=int(data.get("earlier", 0)),
            missing=int(data.get("missing", 0)),
            note=str(data.get("note") or ""),
        )
    except (OSError, TypeError, MalformedResult, json.JSONDecodeError) as error:
        raise ValueError(
            f"{path} is not the rows grade reported ({str(error)[:200]}): grade again into "
            f"{Path(out_dir)}"
        ) from None

"""The rows of an OUT folder: everything its gradebook holds, whichever batch put it there.

One OUT folder is meant to serve a whole term: lab 1's folder (or zip) graded into it in week 2,
lab 2's in week 4, a late file on its own later. After a batch, ``grades.csv`` and the class report
hold:

* every row of this batch (one per entry of its folder);
* every earlier graded result stored in ``OUT/results/`` (signed by this grader: resume.py), unless
  this batch graded the same student's same lab again (then the gradebook holds the new score, and
  so does the table): a file removed from the folder keeps its row and its score, as it keeps them
  in the gradebook. Of two earlier results of one student's lab: the one kept last;
* every other row of earlier batches (``not_on_roster``, ``not_a_notebook``, ``duplicate``,
  ``invalid_json``...: from the rows the last batch kept), until its file is removed or its folder
  graded again (issue 33: an unmatched student once vanished after the next batch);
* with a roster, a ``missing`` row for every roster student who handed in nothing for a lab a batch
  of the term was about (:func:`batch_labs`: a stray notebook of another lab does not make a batch
  about that lab).

Every row names its lab (:func:`lab_of_row`). A roster given on any run re-keys the earlier rows
(:func:`rekeyed`). To start afresh (a new term, or to take a grade out), grade into a new ``--out``.

``grade`` keeps these rows, signed, in ``OUT/rows.json`` (:func:`keep_rows`) before it writes
``grades.csv`` from them; ``export`` reads them back (:func:`kept_rows`), so that ``grades.csv``,
the class report and the LMS files it writes hold exactly the rows ``grade`` reported: never an
earlier result the ledger left out, and every ``missing`` row.
"""
from __future__ import annotations

import hmac
import json
import os
import re
import tempfile
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

from autograder.grading.identity import Roster
from autograder.grading.result import (
    EMPTY,
    GRADED,
    INVALID_JSON,
    MISSING,
    NOT_A_NOTEBOOK,
    NOT_A_REGULAR_FILE,
    NOT_ON_ROSTER,
    UNKNOWN_LAB,
    GradeResult,
    MalformedResult,
    Status,
)
from autograder.batch.resume import CHECKSUM, authentic, sign

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
        labs: tuple[str, ...] = (),
        batch_graded: int = 0,
    ):
        super().__init__(rows)
        self.folder, self.this_batch, self.earlier, self.missing, self.note = (
            folder,
            this_batch,
            earlier,
            missing,
            note,
        )
        # the labs the term's batches were about (a roster student gets a row for each), and how
        # many of this batch's files were graded
        self.labs, self.batch_graded = tuple(labs), batch_graded
        # the rows as grades.csv shows them: with formgrader's changes, if any
        self.reported: Rows | list = self

    def holding(self, rows) -> "Rows":
        """The same folder and counts, holding ``rows`` (these rows, changed by hand in the
        gradebook)."""
        return Rows(rows, self.folder, self.this_batch, self.earlier, self.missing, self.note,
                    self.labs, self.batch_graded)


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


# Rows that do not count as the student's hand-in of their lab: a roster student with only these
# for a lab still gets a ``missing`` row, which says what they handed in instead.
NOT_A_HAND_IN = frozenset({NOT_A_NOTEBOOK, NOT_A_REGULAR_FILE, EMPTY, INVALID_JSON, NOT_ON_ROSTER,
                           UNKNOWN_LAB, MISSING})


def missing_rows(
    roster: Roster | None, lab_ids, rows: list[GradeResult], folder: Path | None
) -> list[GradeResult]:
    """A ``missing`` row for each roster student and lab of ``lab_ids`` (the labs the term's
    batches were about) that no hand-in row names; it says what the student handed in instead (a
    notebook of another lab, a PDF...)."""
    if roster is None:
        return []
    covered = {(row.student_id, row.lab) for row in rows if row.status not in NOT_A_HAND_IN}
    handed_in = defaultdict(list)
    for row in rows:
        if row.status != MISSING:
            handed_in[row.student_id].append(row)
    missing = []
    for lab_id in lab_ids:
        for student in roster.students():
            if (student, lab_id) in covered:
                continue
            message = f"no notebook of this student for {lab_id}" + (
                f" in {folder}" if folder else "")
            others = [
                f"{Path(row.file).name} ("
                + (f"{row.status} for {row.lab}" if row.lab not in (lab_id, None, UNKNOWN)
                   else row.status) + ")"
                for row in handed_in[student]
                if row.lab != lab_id or row.status in NOT_A_HAND_IN
            ]
            if others:
                message += f"; what they handed in: {', '.join(others)}"
            missing.append(GradeResult(student, "", status=MISSING, message=message, lab=lab_id))
    return missing


UNKNOWN = "unknown"  # the lab of a row whose file names none, from a batch about several labs


def lab_of_row(row: GradeResult, batch_labs, known_labs) -> str:
    """The lab a row is about: its own, else the one its file name names, else the batch's (when
    it was about one lab), else ``unknown``.

    >>> lab_of_row(GradeResult("s2", "bob_102_9002_toy_bpe.pdf"), ["gpt2_bpe"], ["toy_bpe"])
    'toy_bpe'
    >>> lab_of_row(GradeResult("s2", "notes.pdf"), ["gpt2_bpe"], ["toy_bpe", "gpt2_bpe"])
    'gpt2_bpe'
    >>> lab_of_row(GradeResult("s2", "notes.pdf"), [], ["toy_bpe"])
    'unknown'
    """
    if row.lab:
        return row.lab
    name = Path(row.file).name
    for lab_id in sorted(known_labs, key=len, reverse=True):
        if _names(name, lab_id):
            return lab_id
    batch_labs = list(batch_labs)
    return batch_labs[0] if len(batch_labs) == 1 else UNKNOWN


def _names(text: str, lab_id: str) -> bool:
    """Whether ``text`` (a file's or a folder's name) names the lab ``lab_id`` as a word."""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(lab_id)}(?![A-Za-z0-9])", text) is not None


def batch_labs(lab_counts: dict[str, int]) -> list[str]:
    """The labs a batch is about: its folder's lab (the one most of its notebooks are of) and any
    lab with at least half as many; a stray notebook of another lab does not make the batch about
    that lab.

    >>> batch_labs({"toy_bpe": 31, "gpt2_bpe": 1})
    ['toy_bpe']
    >>> batch_labs({"toy_bpe": 20, "gpt2_bpe": 15})
    ['gpt2_bpe', 'toy_bpe']
    """
    if not lab_counts:
        return []
    top = max(lab_counts.values())
    return sorted(lab for lab, count in lab_counts.items() if 2 * count >= top)


def _under(file: str, folder: Path | None) -> bool:
    if folder is None or not file:
        return False
    return Path(os.path.abspath(file)).is_relative_to(os.path.abspath(folder))


def rekeyed(row: GradeResult, roster: Roster | None) -> GradeResult:
    """``row`` under the roster's student id, found again from its file's name (login, user id,
    participant id, e-mail); a row the roster cannot place stays, as ``not_on_roster`` with its
    score, so that a roster given on a later run re-keys the earlier results."""
    if roster is None or row.status == MISSING or row.student_id in roster.by_id or not row.file:
        return row
    from autograder.grading.identity import Identity, identify
    from autograder.labs import all_labs

    relative = Path(*Path(row.file).parts[-2:])
    identity = roster.resolve(identify(relative, tuple(all_labs())))
    if identity.status != Status.OK:  # the id it was recorded under (an nbgrader folder's, say)
        recorded = roster.resolve(Identity(row.student_id, "earlier result", name=row.student_id))
        identity = recorded if recorded.status == Status.OK else identity
    if identity.status == Status.OK:
        return replace(row, student_id=identity.student_id)
    if row.status == NOT_ON_ROSTER:
        return row
    score = "" if row.score is None else f" (it scored {row.score:g})"
    return replace(row, status=NOT_ON_ROSTER,
                   message=f"{identity.note}; graded before the roster was given{score}: add the "
                           "student to the roster and grade again")


def all_rows(batch: list[GradeResult], stored: dict[str, GradeResult], this_batch_files: set[str],
             roster: Roster | None, lab_ids: list[str], folder: Path, note: str = "",
             kept: "Rows | None" = None) -> Rows:
    """This batch's rows, the earlier ones the term keeps, and the missing students' rows.

    Kept from earlier batches: every graded result the gradebook holds (``stored``) and every other
    row (``kept``: the rows the last batch reported), until the instructor removes the file or
    grades its folder again; each re-keyed with ``roster`` (:func:`rekeyed`). ``lab_ids``: the labs
    this batch is about (:func:`batch_labs`); with the labs earlier batches were about, the labs a
    roster student gets a ``missing`` row for."""
    from autograder.labs import all_labs

    known = list(all_labs())
    named = [lab for lab in known if folder is not None and _names(Path(folder).name, lab)]
    lab_ids = named if len(named) == 1 else batch_labs(Counter(
        row.lab for row in batch if row.lab in known and row.status not in NOT_A_HAND_IN
    )) or list(lab_ids)
    batch = [replace(row, lab=lab_of_row(row, lab_ids, known)) for row in batch]
    regraded = {(row.student_id, row.lab) for row in batch if row.status == GRADED}
    earlier = [rekeyed(row, roster) for row in earlier_rows(stored, this_batch_files, regraded)]
    earlier = [row for row in earlier
               if row.status != GRADED or (row.student_id, row.lab) not in regraded]
    odd = []
    reported = {row.file for row in batch + earlier}
    for row in (kept or []):
        if row.status in (GRADED, MISSING) or _under(row.file, folder) or row.file in reported:
            continue  # graded: from the gradebook's results; missing: worked out again
        if row.lab in lab_ids and not Path(row.file).exists():
            continue  # the file was removed, and its lab graded again
        odd.append(rekeyed(row, roster))
    # the labs earlier batches were about (a rows.json of an older version: its missing rows' labs)
    earlier_labs = set(kept.labs or {row.lab for row in kept if row.status == MISSING and row.lab}
                       ) if kept is not None else set()
    term_labs = sorted(set(lab_ids) | earlier_labs,
                       key=lambda lab: (lab not in known, known.index(lab) if lab in known else 0))
    missing = missing_rows(roster, term_labs, batch + earlier + odd, folder)
    return Rows(
        batch + earlier + odd + missing,
        folder=folder,
        this_batch=len(batch),
        earlier=len(earlier) + len(odd),
        missing=len(missing),
        note=note,
        labs=tuple(term_labs),
        batch_graded=sum(row.status == GRADED for row in batch),
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
            "labs": list(rows.labs),
            "batch_graded": rows.batch_graded,
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
            labs=tuple(str(lab) for lab in data.get("labs") or ()),
            batch_graded=int(data.get("batch_graded", 0)),
        )
    except (OSError, TypeError, MalformedResult, json.JSONDecodeError) as error:
        raise ValueError(
            f"{path} is not the rows grade reported ({str(error)[:200]}): grade again into "
            f"{Path(out_dir)}"
        ) from None

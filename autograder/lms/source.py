"""Where an export reads graded results from: any source of typed results.

An LMS export needs nothing but :class:`~autograder.grading.result.GradeResult` records: who handed
in which lab, the points of each part, and what the feedback says. :class:`OutFolder` reads them
from a grading output folder: the rows ``grade`` last reported there (``OUT/rows.json``, see
batch/ledger.py: what ``grades.csv`` holds, ``missing`` rows included, never an earlier result
``grade`` left out), checks that nobody edited them or ``OUT/results/*.json`` since, and applies the
changes a TA made by hand in formgrader.
"""
from __future__ import annotations

import hmac
import json
from dataclasses import dataclass, field
from pathlib import Path

from autograder.reports import adjustments
from autograder.batch.ledger import ROWS_FILE, Rows, kept_rows
from autograder.grading.result import MalformedResult
from autograder.batch.resume import CHECKSUM, key_path, sign, unsigned


class SourceError(ValueError):
    """The results cannot be read: the message says which and what to do."""


@dataclass
class OutFolder:
    """The results of ``bpe-labs grade ... --out OUT``, with the gradebook's changes made by hand.

    A result file must carry the checksum that the grading machine's key gives it (see
    batch/resume.py): a grade someone edited in ``results/`` is refused, not exported. Where that
    key is not on this machine the checksums cannot be checked, and :attr:`notes` says so.
    """

    folder: Path
    db_path: Path | None = None
    notes: list[str] = field(default_factory=list)

    def results(self) -> Rows:
        folder = Path(self.folder)
        if not folder.is_dir():
            raise SourceError(
                f"{folder} is not a folder: give the folder that `grade ... --out` wrote"
            )
        stored = sorted((folder / "results").glob("*.json"))
        if not stored and not (folder / ROWS_FILE).is_file():
            raise SourceError(
                f"{folder} holds no grading results (no {folder / 'results'}/*.json): "
                f"grade first, e.g. bpe-labs grade SUBMISSIONS --out {folder}"
            )
        key = key_path().read_bytes() if key_path().is_file() else None
        if key is None:
            self.notes.append(
                f"the results' checksums were not checked: this machine has no grading key "
                f"({key_path()}; set AUTOGRADER_RESUME_KEY to the grading machine's)"
            )
        results, edited = [], []
        for path in stored:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if key is not None and not _signed_with(data, key):
                    edited.append(path.name)
                    continue
                results.append(unsigned(data))
            except (OSError, ValueError, MalformedResult) as error:
                raise SourceError(
                    f"{path} is not a grading result ({str(error)[:200]}): grade again into "
                    f"{folder}"
                ) from None
        if edited:
            raise SourceError(
                f"{len(edited)} result file(s) in {folder / 'results'} do not carry the checksum "
                "the grader gave them, so they were changed after grading or graded on another "
                f"machine ({', '.join(edited[:5])}{' ...' if len(edited) > 5 else ''}): grade "
                "again, or set AUTOGRADER_RESUME_KEY to the grading machine's key"
            )
        try:
            reported = kept_rows(folder, key)
        except ValueError as error:
            raise SourceError(str(error)) from None
        # graded by a version that kept no rows.json: every result file, as it then did
        if reported is None:
            self.notes.append(
                f"{folder / ROWS_FILE} is missing (graded by an earlier version): every result in "
                f"{folder / 'results'} is reported, without missing students; grade again into "
                f"{folder} to report exactly what grade reports"
            )
            reported = Rows(results)
        return reported.holding(
            adjustments.from_gradebook(reported, Path(self.db_path or folder / "gradebook.db"))
        )


def _signed_with(data: object, key: bytes) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get(CHECKSUM), str):
        return False
    expected = sign({k: v for k, v in data.items() if k != CHECKSUM}, key)[CHECKSUM]
    return hmac.compare_digest(expected.encode(), data[CHECKSUM].encode("utf-8", "replace"))

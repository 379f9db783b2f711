"""The result of grading one file: one typed record from the grader to the batch, the reports and
the gradebook.

A :class:`GradeResult` travels as it is between processes (pickled by the local workers, Dask and
the background helpers) and as plain JSON data in ``OUT/results/*.json`` and Gradescope's runner.
:meth:`GradeResult.to_json` and :meth:`GradeResult.from_json` are the one place where it becomes
JSON data and back; ``from_json`` checks every field against its declared type and raises
:class:`MalformedResult`, naming the field, for anything else.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import re
import types
import typing
from dataclasses import dataclass, field

from autograder.kernel.errors import CellStatus
from autograder.strenum import StrEnum


class Status(StrEnum):
    """The status of a row: graded, or why the file was not graded (grades.csv's ``status``, the
    results' JSON, the ledger, the reports and the LMS exports write its value)."""

    GRADED = "graded"
    GRADER_ERROR = "grader_error"  # a failure of the grader, not of the file
    WORKER_LOST = "worker_lost"  # the process grading the file died or hung, twice
    # what intake found in the file
    EMPTY = "empty_file"
    INVALID_JSON = "invalid_json"
    NOT_A_NOTEBOOK = "not_a_notebook"
    UNKNOWN_LAB = "unknown_lab"
    TOO_LARGE = "file_too_large"
    DUPLICATE = "duplicate"  # a later file of the same student and lab was graded instead
    NOT_ON_ROSTER = "not_on_roster"
    NO_NOTEBOOK = "no_notebook"  # Gradescope: the submission holds no notebook, or more than one
    NOT_A_REGULAR_FILE = "not_a_regular_file"  # a link, a FIFO, a device: never opened
    MISSING = "missing"  # a roster student with no file for a lab the batch grades
    # Everything done for the file (decoding, checking, reports included) was still running when
    # --notebook-timeout (and a short grace) was up: its grading process was ended from outside.
    OUT_OF_TIME = "out_of_time"
    # Not a row's status: what intake and the roster check say of a file that may go on to be
    # graded (``Submission.status``, ``Identity.status``). A result never has it (from_json).
    OK = "ok"


# The statuses by their old names, which the batch, the reports, the service and the LMS exports
# import: each is the enum member itself.
GRADED, GRADER_ERROR, WORKER_LOST = Status.GRADED, Status.GRADER_ERROR, Status.WORKER_LOST
EMPTY, INVALID_JSON, NOT_A_NOTEBOOK, UNKNOWN_LAB, TOO_LARGE = (
    Status.EMPTY, Status.INVALID_JSON, Status.NOT_A_NOTEBOOK, Status.UNKNOWN_LAB, Status.TOO_LARGE)
DUPLICATE, NOT_ON_ROSTER, NO_NOTEBOOK = Status.DUPLICATE, Status.NOT_ON_ROSTER, Status.NO_NOTEBOOK
NOT_A_REGULAR_FILE, MISSING, OUT_OF_TIME = (
    Status.NOT_A_REGULAR_FILE, Status.MISSING, Status.OUT_OF_TIME)
# The statuses a row may have.
STATUSES = frozenset(Status) - {Status.OK}


class CellKind(StrEnum):
    """The kind of a code cell in the program repair builds (``repair.Step``) and of a cell that
    did not run cleanly (:class:`CellEvent`, in the feedback, Gradescope's and the service's)."""

    GIVEN = "given"  # the release's own code, run as released
    ANSWER = "answer"  # an answer cell, as the student wrote it
    ADDED = "added"  # a code cell the student added
    CHECK = "check"  # a part's test cell: the part is graded here (never a CellEvent's kind)
    # the feedback run that was skipped: written by graders before one kernel per notebook
    # (aeaf763), read in old results, never written now
    FEEDBACK = "feedback"


class MalformedResult(ValueError):
    """JSON data that is not a grading result (a damaged or foreign results file)."""


class Verdict(StrEnum):
    """What a part's hidden tests found: the feedback's words are chosen from it (``verdicts.py``,
    ``grade.Redactor``), never from a message's text."""

    PASSED = "passed"
    # an assert of the hidden tests: its message is rendered from their source
    FAILED_CHECK = "failed_check"
    TOO_SLOW = "too_slow"  # a speed check: the grader's measurements
    # the student's function raised: the function and the class, never the message
    RAISED = "raised"
    DID_NOT_FINISH = "did_not_finish"  # a call ran out of its time
    OUT_OF_TIME = "out_of_time"  # the part's or the notebook's time was used up
    KERNEL_DIED = "kernel_died"
    NOT_CHECKABLE = "not_checkable"  # what the code returned could not be checked
    MISSING = "missing"  # a name the hidden tests use is not defined
    NOT_GRADED = "not_graded"  # the grader could not grade the part


@dataclass(frozen=True)
class PartScore:
    """One graded part: its points, the hidden tests' message, and what the notebook's own check
    printed."""

    part_id: str
    score: float
    max_score: float
    message: str = ""
    visible_check: str = ""
    verdict: Verdict | None = None  # None in results written before verdicts were recorded

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score


@dataclass(frozen=True)
class IntegrityEvent:
    """Something intake or repair did to the notebook's structure (converted, restored, moved,
    added...)."""

    event: str
    cell: str
    detail: str = ""


@dataclass(frozen=True)
class CellEvent:
    """A cell that did not run cleanly (or the feedback run that was skipped), as the student is
    shown it."""

    cell: str
    kind: CellKind
    status: CellStatus  # never ok
    error: str = ""


@dataclass(frozen=True)
class Adjustment:
    """What a person changed by hand in nbgrader's gradebook (formgrader): a part's score, or a
    comment on a cell. Never made by the autograder; applied to a result when its reports are
    written."""

    cell: str  # a part's id (a score) or an answer cell's id (a comment)
    auto_score: float | None = None  # what the autograder gave the part
    # what the part counts now (manual score plus extra credit); None: a comment only
    score: float | None = None
    comment: str = ""


@dataclass(frozen=True)
class GradeResult:
    """One file's row. ``score``, ``max_score``, ``parts`` and ``isolation`` are set once it is
    graded."""

    student_id: str
    file: str
    status: Status = Status.GRADER_ERROR
    message: str = ""
    lab: str | None = None
    sha256: str | None = None
    score: float | None = None
    max_score: float | None = None
    parts: dict[str, PartScore] = field(default_factory=dict)
    integrity: list[IntegrityEvent] = field(default_factory=list)
    cells: list[CellEvent] = field(default_factory=list)
    seconds: float = 0.0
    isolation: str | None = None  # how the student's kernel was isolated
    restarts: int = 0  # kernel restarts it took
    kernels: int = 0  # kernels it took: 1, or 2 when hidden tests had to run at their cells' places
    # the grader's own, for the instructor, when status is grader_error
    traceback: str | None = None
    # set by the batch: who handed the file in, when the export names needed telling apart
    identity: str = ""
    # set by the batch: the digest of the course files it was graded with
    sources: str | None = None
    # set for reports: changes made by hand in the gradebook
    adjustments: list[Adjustment] = field(default_factory=list)

    @property
    def graded(self) -> bool:
        return self.status == GRADED

    def to_json(self) -> dict:
        """Plain JSON data (dicts, lists, strings, numbers, None)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: object) -> "GradeResult":
        """The result ``data`` (from :meth:`to_json`, now or in an earlier version) holds.

        A field missing from ``data`` takes its default (older files lack the newer fields); a
        required field missing, a key no field has, or a value of the wrong type raises
        :class:`MalformedResult`.
        """
        result = _decode(cls, data, "result")
        if result.status not in STATUSES:
            raise MalformedResult(f"result.status: {result.status!r} is not a status")
        return result


@functools.lru_cache(maxsize=None)
def _shape(kind) -> tuple[dict, dict]:
    """A dataclass's field types and fields, worked out once: ``typing.get_type_hints`` evaluates
    every annotation again on each call, and it was most of the time the service spent listing a
    student's submissions (benchmarks/bench_service.py)."""
    return typing.get_type_hints(kind), {f.name: f for f in dataclasses.fields(kind)}


def _decode(kind, value, where: str):
    """``value`` (JSON data) as an instance of the type ``kind``, checked all the way down."""
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in arguments:
            return None
        (kind,) = [argument for argument in arguments if argument is not type(None)]
        return _decode(kind, value, where)
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, dict):
            raise MalformedResult(f"{where}: expected an object, got {type(value).__name__}")
        # a dataclass type here (is_dataclass also accepts instances, which a type hint never is)
        hints, fields = _shape(typing.cast(type, kind))
        unknown = sorted(str(key) for key in value if key not in fields)
        if unknown:
            raise MalformedResult(f"{where}: unknown field(s) {', '.join(unknown)}")
        missing = [
            name
            for name, f in fields.items()
            if name not in value
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        ]
        if missing:
            raise MalformedResult(f"{where}: missing field(s) {', '.join(missing)}")
        build = typing.cast(typing.Callable[..., object], kind)
        return build(
            **{name: _decode(hints[name], item, f"{where}.{name}") for name, item in value.items()}
        )
    if origin is dict:
        if not isinstance(value, dict):
            raise MalformedResult(f"{where}: expected an object, got {type(value).__name__}")
        return {key: _decode(arguments[1], item, f"{where}.{key}") for key, item in value.items()}
    if origin is list:
        if not isinstance(value, list):
            raise MalformedResult(f"{where}: expected a list, got {type(value).__name__}")
        return [
            _decode(arguments[0], item, f"{where}[{index}]") for index, item in enumerate(value)
        ]
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind(value)
        except ValueError:
            words = re.sub(r"(?<!^)(?=[A-Z])", " ", kind.__name__).lower()  # CellKind: cell kind
            raise MalformedResult(f"{where}: {str(value)[:40]!r} is not a {words}") from None
    # bool is an int to Python but not a number here; an int
    # is a float (kept as it is: 2 stays 2 in grades.csv)
    accepted = {float: (int, float), int: (int,), str: (str,)}[kind]
    if isinstance(value, bool) or not isinstance(value, accepted):
        raise MalformedResult(
            f"{where}: expected {kind.__name__}, got {type(value).__name__} {str(value)[:40]!r}"
        )
    return value

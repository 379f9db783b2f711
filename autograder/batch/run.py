"""Grade a folder of handed-in notebooks: one row per file, resumable, in parallel if asked.

Each finished result is written at once to ``OUT/results/`` (atomically, with a checksum keyed
outside OUT) and to the gradebook, so an interrupted run loses nothing: the next run skips files
whose stored result is intact and was made for the same file content and the same course files
(see resume.py). Workers (local processes or a Dask cluster) only grade and return a
``GradeResult``; this process alone writes files and the gradebook.

Whatever a file does (a 50,000-deep JSON nesting, a worker killed or stopped, a result that cannot
be recorded), it costs that file's row only: the batch always ends with exactly one row per file.
The course files the grader imports are hashed before grading and checked before every result is
recorded; if they changed, the batch stops (course.py).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import tempfile
import traceback
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from autograder.grading.folder import (
    NOTEBOOK,
    SPECIAL,
    NothingToGrade,
    check_something_to_grade,
    folder_to_grade,
)
from autograder.batch.guard import CourseChanged, CourseGuard, course_files
from autograder.kernel import tempdirs
from autograder.batch.deadline import (
    FileJob,
    file_lost,
    file_out_of_time,
    hard_seconds,
)
from autograder.grading.grade import error_result, grade_file
from autograder.grading.settings import Settings
from autograder.kernel.session import isolation_status
from autograder.grading.identity import Identity, Roster
from autograder.grading.intake import file_sha256, find_submissions, read_submission
from autograder.batch.ledger import (
    ROWS_FILE,
    Rows,
    all_rows,
    keep_rows,
    kept_rows,
    rekeyed,
    stored_results,
)
from autograder.grading.names import file_name, terminal
from autograder.grading.result import (
    DUPLICATE,
    GRADED,
    GRADER_ERROR,
    MISSING,
    NOT_A_NOTEBOOK,
    NOT_A_REGULAR_FILE,
    NOT_ON_ROSTER,
    GradeResult,
    Status,
)
from autograder.batch.resume import load_key, signed, trusted
from autograder.batch.workers import Job, WorkerPool
from autograder.batch.dask_options import (  # re-exported (the batch's front door)
    InsecureScheduler,
    SchedulerUnreachable,
    dask_security,
)

__all__ = [
    "grade_folder",
    "plan",
    "write_reports",
    "CourseChanged",
    "InsecureScheduler",
    "Interrupted",
    "NothingToGrade",
    "OutNotAFolder",
    "SchedulerUnreachable",
    "dask_security",
]


class OutNotAFolder(ValueError):
    """``--out`` names something that is not a folder."""


def result_path(out_dir: Path, file: Path, submissions_dir: Path) -> Path:
    """Where the result of ``file`` is kept: named after its path inside the folder (lexically: a
    link is never resolved), readable when the name is plain, else shortened and hashed
    (grading/names.py)."""
    relative = Path(os.path.abspath(file)).relative_to(os.path.abspath(submissions_dir))
    return Path(out_dir) / "results" / file_name("__".join(relative.parts), ".json")


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8"
    ) as handle:
        try:
            handle.write(text)
        except BaseException:
            os.unlink(handle.name)
            raise
    try:
        os.replace(handle.name, path)
    except BaseException:
        os.unlink(handle.name)  # nothing half-made is left in results/
        raise


def _planned_row(
    path: Path, identity, status: Status, message: str, lab: str | None = None
) -> GradeResult:
    return replace(
        error_result(path, identity.student_id, status, message), lab=lab, identity=identity.note
    )


def _with_earlier_score(row: GradeResult, earlier: GradeResult | None) -> GradeResult:
    """A ``not_on_roster`` row with the score its file got when graded before the roster was
    given (the file is not graded again: the roster does not say whose it is)."""
    if row.status != NOT_ON_ROSTER or earlier is None or earlier.status != GRADED:
        return row
    return replace(
        row, lab=earlier.lab, score=earlier.score, max_score=earlier.max_score,
        parts=earlier.parts, sha256=earlier.sha256,
        message=f"{row.message}; it scored {earlier.score:g} of {earlier.max_score:g} when "
                "graded before the roster was given",
    )


class Interrupted(Exception):
    """Ctrl-C while grading: ``done`` of ``total`` files have their row recorded; the same command
    resumes."""

    def __init__(self, done: int, total: int):
        super().__init__(
            f"interrupted: done {done} of {total} files; run the same command to resume"
        )
        self.done, self.total = done, total


def plan(
    submissions_dir: Path, roster: Roster | None = None
) -> tuple[list[tuple[Path, str, str]], list[GradeResult], list[str]]:
    """Files to grade (file, student, identity note), rows for the entries that are not graded (a
    file that loses to a later one of the same student and lab, a student not on the roster, a file
    that is not a notebook or could not even be read, a link or a FIFO), and the labs the files
    belong to. Raises :class:`NothingToGrade` when the folder holds no notebook at all.

    Two files for one student and one lab: the later submission is graded (Canvas: the higher
    submission id, then the higher ``-N`` re-upload number; otherwise the name that sorts last);
    the others get a ``duplicate`` row naming it.
    """
    # (student, lab) -> the (file, identity) pairs that are its submissions
    by_key: dict[tuple[str, str], list[tuple[Path, Identity]]] = defaultdict(list)
    rows = []
    found = find_submissions(submissions_dir, roster)
    check_something_to_grade(Path(submissions_dir), [entry for entry, _ in found])
    for entry, identity in found:
        path = entry.path
        if identity.status != Status.OK:
            rows.append(_planned_row(path, identity, identity.status, identity.note))
            continue
        if entry.kind != NOTEBOOK:
            rows.append(
                _planned_row(
                    path,
                    identity,
                    NOT_A_REGULAR_FILE if entry.kind == SPECIAL else NOT_A_NOTEBOOK,
                    entry.what,
                )
            )
            continue
        try:
            submission = read_submission(path, identity.student_id)
        except Exception as error:  # RecursionError, MemoryError...: this file's row, not the batch
            rows.append(
                _planned_row(
                    path,
                    identity,
                    GRADER_ERROR,
                    f"this file could not be read ({type(error).__name__}: {str(error)[:200]})",
                )
            )
            continue
        if submission.status == NOT_A_REGULAR_FILE:  # it changed since the folder was listed
            rows.append(_planned_row(path, identity, NOT_A_REGULAR_FILE, submission.message))
            continue
        by_key[(identity.student_id, submission.lab_id or f"?{path.name}")].append((path, identity))
    to_grade = []
    for (student, lab_id), files in by_key.items():
        candidates = sorted(files, key=lambda item: (item[1].order, item[0].name))
        winner, identity = candidates[-1]
        to_grade.append((winner, student, identity.note))
        for loser, other in candidates[:-1]:
            rows.append(
                _planned_row(
                    loser,
                    other,
                    DUPLICATE,
                    f"another file of this student for this lab was graded instead: {winner.name}",
                    lab_id,
                )
            )
    lab_ids = sorted({lab_id for _, lab_id in by_key if not lab_id.startswith("?")})
    return sorted(to_grade), rows, lab_ids


def _run_local(jobs, settings: Settings, workers: int):
    """``workers`` grading processes (``--workers 0``: one, as ``--workers 1``), each file ended
    from outside when its time is up (deadline.py)."""
    pool = WorkerPool(grade_file, workers, on_lost=file_lost, budget=hard_seconds(settings),
                      memory_bytes=settings.worker_memory_bytes, on_timeout=file_out_of_time)
    files = [
        Job(index, FileJob(Path(path), student, settings), name=Path(path).name)
        for index, (path, student) in enumerate(jobs)
    ]
    for _, result in pool.run(files):
        yield result


def _run_dask(jobs, settings: Settings, scheduler: str, security=None, allow_fence=False,
              wait_seconds: float | None = None):
    from autograder.course import current
    from autograder.batch.dask_grading import WAIT_SECONDS, run_dask

    yield from run_dask(
        list(jobs), settings, scheduler, security, current().spec, allow_fence,
        WAIT_SECONDS if wait_seconds is None else wait_seconds,
        say=lambda line: print(terminal(line), file=sys.stderr, flush=True))


def _record(recorder, result: GradeResult) -> GradeResult:
    """Write the result to the gradebook; if it cannot be, the row says so (and nothing is
    half-kept)."""
    try:
        recorder.record(result)
    except Exception as error:
        failed = error_result(
            Path(result.file),
            result.student_id,
            GRADER_ERROR,
            f"the result could not be recorded in the gradebook ({type(error).__name__}: "
            f"{str(error)[:200]})",
        )
        return replace(failed, lab=result.lab, sha256=result.sha256)
    return result


def check_out_folder(out_dir: Path) -> None:
    """Raise :class:`OutNotAFolder` when ``out_dir`` exists and is not a folder."""
    if out_dir.exists() and not out_dir.is_dir():
        raise OutNotAFolder(
            f"--out {out_dir} is a file, not a folder: name a folder (a new one, or the one that "
            "holds this course's earlier results)"
        )


def grade_folder(
    submissions_dir: Path,
    out_dir: Path,
    settings: Settings = Settings(),
    workers: int = 1,
    scheduler: str | None = None,
    db_path: Path | None = None,
    progress: bool = True,
    roster: Roster | None = None,
    security=None,
    course: CourseGuard | None = None,
    allow_fence: bool = False,
    worker_wait: float | None = None,
) -> Rows:
    """Grade every entry of ``submissions_dir`` into ``out_dir``; returns the rows grades.csv now
    holds: one per entry, the earlier batches' rows the gradebook still holds, and with ``roster`` a
    ``missing`` row per roster student and lab without one (ledger.py).

    ``workers`` local grading processes (0: one, as 1: every file's time is held from outside its
    grading process, see deadline.py), or a Dask cluster at ``scheduler`` reached with ``security``
    (see :func:`dask_security`). Raises :class:`NothingToGrade` (a missing or empty folder, no
    notebook in it) and :class:`OutNotAFolder` before anything is written; :class:`CourseChanged` if
    a course file changes while grading, and :class:`Interrupted` on Ctrl-C or SIGTERM: results
    recorded until then stay, and a rerun resumes.
    """
    with _ending_on_sigterm():
        return _grade_folder(
            submissions_dir,
            out_dir,
            settings,
            workers,
            scheduler,
            db_path,
            progress,
            roster,
            security,
            course,
            allow_fence,
            worker_wait,
        )


@contextlib.contextmanager
def _ending_on_sigterm():
    """SIGTERM ends a batch as Ctrl-C does (KeyboardInterrupt), so that its workers, their kernels
    and temporary folders are ended and removed on the way out, and swept before and after."""
    tempdirs.sweep()
    tempdirs.sweep_cgroups()
    previous = None
    if threading.current_thread() is threading.main_thread():
        def interrupt(signum, frame):
            raise KeyboardInterrupt(f"signal {signum}")

        previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        tempdirs.sweep()


def _grade_folder(
    submissions_dir,
    out_dir,
    settings,
    workers,
    scheduler,
    db_path,
    progress,
    roster,
    security,
    course,
    allow_fence=False,
    worker_wait=None,
) -> Rows:
    from tqdm.auto import tqdm

    from autograder.reports import adjustments, formgrader, gradebook, report

    out_dir = Path(out_dir)
    check_out_folder(out_dir)
    unpacked = ""
    if Path(submissions_dir).is_file() and Path(submissions_dir).suffix.lower() == ".zip":
        # an LMS's submissions zip, as it comes (unpack.py)
        from autograder.batch.unpack import unpack_submissions

        zip_path = Path(submissions_dir)
        submissions_dir = unpack_submissions(zip_path, out_dir)
        unpacked = f"{zip_path} unpacked into {submissions_dir}"
    submissions_dir, note = folder_to_grade(Path(submissions_dir))
    note = "; ".join(filter(None, [unpacked, note]))
    db_path = Path(db_path or out_dir / "gradebook.db")
    key = load_key()
    settings = replace(
        settings,
        denied=tuple(settings.denied)
        + (submissions_dir.resolve(), out_dir.resolve(), db_path.resolve()),
    )
    # imports nbgrader in a process of its own, while this one plans and grades
    recorder = gradebook.Recorder(db_path)
    try:
        jobs, planned, lab_ids = plan(submissions_dir, roster)
    except BaseException:
        recorder.close()
        raise
    out_dir.mkdir(parents=True, exist_ok=True)  # only now: a wrong folder leaves OUT as it was
    db_path.parent.mkdir(parents=True, exist_ok=True)
    stored = stored_results(out_dir / "results", key)
    try:  # the rows the term holds so far (the last batch's report): kept unless replaced
        kept = kept_rows(out_dir, key)
    except ValueError:
        kept = None
    # a file the roster does not place, graded on an earlier run: its row keeps the score it got
    planned = [_with_earlier_score(row, stored.get(result_path(out_dir, Path(row.file),
                                                               submissions_dir).name))
               for row in planned]
    this_batch_files = {
        result_path(out_dir, Path(row.file), submissions_dir).name for row in planned
    }
    this_batch_files |= {result_path(out_dir, path, submissions_dir).name for path, _, _ in jobs}
    # imports matplotlib for the class report, also in the background; forked after plan, it has the
    # labs read
    painter = report.Painter()
    course = course or CourseGuard(course_files(lab_ids))
    notes = {path: note for path, _, note in jobs}
    recorder.prepare(lab_ids)  # the gradebook is created there while the first notebooks grade
    if roster is not None:  # a roster given now re-keys the earlier batches' results (ledger.py)
        for name, result in list(stored.items()):
            moved = rekeyed(result, roster)
            if moved.status == GRADED and moved.student_id != result.student_id:
                stored[name] = moved
                _keep(moved, out_dir / "results" / name, key, None)
                _record(recorder, moved)
    results = list(planned)
    pending = []
    for path, student, _ in jobs:
        saved = result_path(out_dir, path, submissions_dir)
        try:
            previous = (
                trusted(
                    json.loads(saved.read_text(encoding="utf-8")),
                    key,
                    file_sha256(path),
                    course.digest,
                )
                if saved.exists()
                else None
            )
        except Exception:  # a damaged or planted result file: grade again
            previous = None
        if previous is not None:
            if previous.student_id != student:  # a roster given since: the roster's id
                previous = replace(previous, student_id=student, identity=notes.get(path, ""))
                _keep(previous, saved, key, None)
            # idempotent: a run stopped right after the file was written
            results.append(_record(recorder, previous))
            continue
        pending.append((path, student))

    def rows() -> Rows:
        return all_rows(results, stored, this_batch_files, roster, lab_ids, submissions_dir, note,
                        kept)

    expected = len(results) + len(pending)
    if scheduler:
        runner = _run_dask(pending, settings, scheduler, security, allow_fence, worker_wait)
    else:
        if pending:
            # probed once here (a real kernel): the grading processes forked below inherit it
            isolation_status()
        runner = _run_local(pending, settings, max(workers, 1))
    bar = tqdm(total=len(pending), desc="grading", unit="nb", disable=not progress, file=sys.stderr)
    if note:
        bar.write(terminal(note), file=sys.stderr)
    if len(pending) < len(jobs):
        bar.write(
            terminal(
                f"resuming: {len(jobs) - len(pending)} results already in {out_dir / 'results'}"
            ),
            file=sys.stderr,
        )
    if len(results) == expected:
        painter.start(rows(), out_dir)
    interrupted: Interrupted | None
    try:
        for result in runner:
            course.check()  # before anything of this result is kept
            result = replace(
                result, sources=course.digest, identity=notes.get(Path(result.file), "")
            )
            # first: a result file means "recorded", so resume may trust it
            result = _record(recorder, result)
            if result.status != GRADER_ERROR or "recorded" not in result.message:
                _keep(result, result_path(out_dir, Path(result.file), submissions_dir), key, bar)
            results.append(result)
            bar.set_postfix_str(
                terminal(f"{result.student_id}: {result.status} in {result.seconds:.1f}s")
            )
            bar.update()
            if len(results) == expected:  # the last one: the report is drawn while the workers stop
                everything = rows()
                painter.start(
                    everything.holding(adjustments.for_reports(everything, db_path)), out_dir
                )
    except KeyboardInterrupt:
        interrupted = Interrupted(len(results), expected)
    else:
        interrupted = None
    finally:
        bar.close()
        if hasattr(runner, "close"):
            runner.close()  # ends the workers even when the batch stops early
        recorder.close()  # everything sent is in the gradebook
    if interrupted is not None:
        painter.background.close()
        raise interrupted from None
    # nbgrader's formgrader on this gradebook
    formgrader.write_course_or_say_why(out_dir, results, db_path)
    everything = rows()  # the autograder's own results
    _keep_rows(everything, out_dir, key)
    # with changes made in formgrader
    everything.reported = everything.holding(adjustments.for_reports(everything, db_path))
    write_reports(everything.reported, out_dir, painter)
    return everything


def _keep(result: GradeResult, path: Path, key: bytes, bar) -> None:
    """The signed result file resume trusts; if it cannot be written, the file is graded again next
    time."""
    try:
        _write_atomically(path, json.dumps(signed(result, key), indent=1))
    except OSError as error:
        if bar is None:
            return
        bar.write(
            terminal(
                f"the result of {result.file} could not be kept in {path.parent} "
                f"({error.strerror}): a rerun grades it again"
            ),
            file=sys.stderr,
        )


def _keep_rows(rows: Rows, out_dir: Path, key: bytes) -> None:
    """OUT/rows.json, which ``export`` reports again (ledger.py); if it cannot be written, no older
    one stays to be reported instead."""
    try:
        keep_rows(rows, out_dir, key)
    except OSError as error:
        with contextlib.suppress(OSError):
            (out_dir / ROWS_FILE).unlink()
        print(
            terminal(
                f"note: {out_dir / ROWS_FILE} could not be written ({error.strerror}): grade again "
                f"before `bpe-labs export {out_dir}`"
            ),
            file=sys.stderr,
        )


def write_reports(results: list[GradeResult], out_dir: Path, painter=None) -> None:
    """grades.csv first (it must exist whatever happens), then feedback pages and the class report;
    a result whose page cannot be made costs that page only."""
    from autograder.reports import report

    report.write_grades_csv(results, out_dir / "grades.csv")
    for result in results:
        if result.status == MISSING:  # no file: nothing to give feedback on
            continue
        try:
            path = report.feedback_path(out_dir, result)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(report.feedback_html(result), encoding="utf-8", errors="replace")
        except Exception:
            print(
                terminal(f"no feedback page for {result.file}:")
                + f"\n{traceback.format_exc(limit=5)}",
                file=sys.stderr,
            )
    try:
        report.class_report(results, out_dir, painter)
    except Exception:
        print(
            f"the class report could not be written:\n{traceback.format_exc(limit=5)}",
            file=sys.stderr,
        )

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

import ipaddress
import json
import os
import sys
import tempfile
import traceback
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlparse

from autograder.guard import CourseChanged, CourseGuard, course_files
from autograder.grade import Settings, error_result, grade_file
from autograder.identity import Roster
from autograder.intake import file_sha256, find_submissions, read_submission
from autograder.result import DUPLICATE, GRADER_ERROR, WORKER_LOST, GradeResult
from autograder.resume import load_key, signed, trusted
from autograder.workers import WorkerPool

__all__ = ["grade_folder", "plan", "write_reports", "CourseChanged", "InsecureScheduler"]


class InsecureScheduler(RuntimeError):
    """A remote Dask scheduler without TLS and authentication, and no ``--insecure``."""


def result_path(out_dir: Path, file: Path, submissions_dir: Path) -> Path:
    relative = Path(file).resolve().relative_to(Path(submissions_dir).resolve())
    return Path(out_dir) / "results" / (str(relative).replace(os.sep, "__") + ".json")


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(handle.name, path)


def _planned_row(path: Path, identity, status: str, message: str, lab: str | None = None) -> GradeResult:
    return replace(error_result(path, identity.student_id, status, message), lab=lab, identity=identity.note)


def plan(submissions_dir: Path, roster: Roster | None = None) -> tuple[list[tuple[Path, str, str]], list[GradeResult], list[str]]:
    """Files to grade (file, student, identity note), rows for files that are not graded (a file
    that loses to a later one of the same student and lab, a student not on the roster, a file
    that could not even be read), and the labs the files belong to.

    Two files for one student and one lab: the later submission is graded (Canvas: the higher
    submission id, then the higher ``-N`` re-upload number; otherwise the name that sorts last);
    the others get a ``duplicate`` row naming it.
    """
    by_key: dict[tuple[str, str], list] = defaultdict(list)
    rows = []
    for path, identity in find_submissions(submissions_dir, roster):
        if identity.status != "ok":
            rows.append(_planned_row(path, identity, identity.status, identity.note))
            continue
        try:
            lab_id = read_submission(path, identity.student_id).lab_id
        except Exception as error:  # RecursionError, MemoryError...: this file's row, not the batch
            rows.append(_planned_row(path, identity, GRADER_ERROR,
                                     f"this file could not be read ({type(error).__name__}: {str(error)[:200]})"))
            continue
        by_key[(identity.student_id, lab_id or f"?{path.name}")].append((path, identity))
    to_grade = []
    for (student, lab_id), found in by_key.items():
        found = sorted(found, key=lambda item: (item[1].order, item[0].name))
        winner, identity = found[-1]
        to_grade.append((winner, student, identity.note))
        for loser, other in found[:-1]:
            rows.append(_planned_row(loser, other, DUPLICATE,
                                     f"another file of this student for this lab was graded instead: {winner.name}", lab_id))
    lab_ids = sorted({lab_id for _, lab_id in by_key if not lab_id.startswith("?")})
    return sorted(to_grade), rows, lab_ids


def _lost_row(args: tuple, reason: str) -> GradeResult:
    path, student, _ = args
    return error_result(path, student, WORKER_LOST, f"grading this file stopped its grader: {reason}")


def _run_inline(jobs, settings: Settings):
    """In this process (``--workers 0``): for debugging; a file that kills its grader ends the batch."""
    for path, student in jobs:
        yield grade_file(path, student, settings)


def _run_local(jobs, settings: Settings, workers: int):
    pool = WorkerPool(grade_file, workers, on_lost=_lost_row,
                      budget=settings.limits.notebook_seconds + 120, memory_bytes=settings.worker_memory_bytes)
    for _, result in pool.run([(path, student, settings) for path, student in jobs]):
        yield result


def _is_loopback(address: str) -> bool:
    host = urlparse(address if "://" in address else f"tcp://{address}").hostname or ""
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def dask_security(address: str, tls_ca: str | None = None, tls_cert: str | None = None, tls_key: str | None = None,
                  insecure: bool = False, security=None):
    """The ``distributed.security.Security`` to reach ``address`` with, or None for a local one.

    A scheduler on another machine must be reached over TLS with a client certificate (mutual TLS:
    the scheduler admits only holders of a certificate its CA signed), unless ``insecure``.
    """
    if security is None and tls_ca and tls_cert:
        from distributed.security import Security

        security = Security(tls_ca_file=tls_ca, tls_client_cert=tls_cert, tls_client_key=tls_key, require_encryption=True)
    if security is None and not insecure and not _is_loopback(address):
        raise InsecureScheduler(
            f"refusing to send grading jobs to {address} without TLS and authentication: anyone who can reach an "
            "unauthenticated scheduler can run code on its workers and read the course. Give --tls-ca-file, "
            "--tls-cert and --tls-key (a tls:// scheduler that requires client certificates), or pass --insecure "
            "on a network you trust.")
    if security is not None and not address.startswith("tls://"):
        raise InsecureScheduler(f"TLS settings were given but the scheduler address {address} is not tls://")
    return security


def _run_dask(jobs, settings: Settings, scheduler: str, security=None):
    from distributed import Client, as_completed as dask_completed

    with Client(scheduler, security=security) as client:
        futures = {client.submit(grade_file, path, student, settings, pure=False, retries=1): (path, student)
                   for path, student in jobs}
        for future in dask_completed(futures):
            try:
                yield future.result()
            except Exception as error:  # a worker lost twice (KilledWorker), or the cluster failed
                path, student = futures[future]
                yield error_result(path, student, WORKER_LOST, f"the Dask worker grading this file failed ({type(error).__name__})")


def _record(recorder, result: GradeResult) -> GradeResult:
    """Write the result to the gradebook; if it cannot be, the row says so (and nothing is half-kept)."""
    try:
        recorder.record(result)
    except Exception as error:
        failed = error_result(Path(result.file), result.student_id, GRADER_ERROR,
                              f"the result could not be recorded in the gradebook ({type(error).__name__}: {str(error)[:200]})")
        return replace(failed, lab=result.lab, sha256=result.sha256)
    return result


def grade_folder(submissions_dir: Path, out_dir: Path, settings: Settings = Settings(), workers: int = 1,
                 scheduler: str | None = None, db_path: Path | None = None, progress: bool = True,
                 roster: Roster | None = None, security=None, course: CourseGuard | None = None) -> list[GradeResult]:
    """Grade every notebook under ``submissions_dir`` into ``out_dir``; returns all results, one per file.

    ``workers`` local grading processes (0: in this process), or a Dask cluster at ``scheduler``
    reached with ``security`` (see :func:`dask_security`). Raises :class:`CourseChanged` if a course
    file changes while grading: results recorded until then stay, and a rerun resumes.
    """
    from tqdm.auto import tqdm

    from autograder import adjustments, formgrader, gradebook, report

    submissions_dir, out_dir = Path(submissions_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    db_path = Path(db_path or out_dir / "gradebook.db")
    key = load_key()
    settings = replace(settings, denied=tuple(settings.denied) + (submissions_dir.resolve(), out_dir.resolve(), db_path.resolve()))
    recorder = gradebook.Recorder(db_path)  # imports nbgrader in a process of its own, while this one plans and grades
    jobs, results, lab_ids = plan(submissions_dir, roster)
    # imports matplotlib for the class report, also in the background; forked after plan, it has the labs read
    painter = report.Painter()
    course = course or CourseGuard(course_files(lab_ids))
    notes = {path: note for path, _, note in jobs}
    recorder.prepare(lab_ids)  # the gradebook is created there while the first notebooks grade
    pending = []
    for path, student, _ in jobs:
        saved = result_path(out_dir, path, submissions_dir)
        try:
            previous = trusted(json.loads(saved.read_text(encoding="utf-8")), key, file_sha256(path),
                               course.digest) if saved.exists() else None
        except Exception:  # a damaged or planted result file: grade again
            previous = None
        if previous is not None:
            results.append(_record(recorder, previous))  # idempotent: a run stopped right after the file was written
            continue
        pending.append((path, student))
    expected = len(results) + len(pending)
    if scheduler:
        runner = _run_dask(pending, settings, scheduler, security)
    elif workers <= 0:
        runner = _run_inline(pending, settings)
    else:
        runner = _run_local(pending, settings, workers)
    bar = tqdm(total=len(pending), desc="grading", unit="nb", disable=not progress, file=sys.stderr)
    if len(pending) < len(jobs):
        bar.write(f"resuming: {len(jobs) - len(pending)} results already in {out_dir / 'results'}")
    try:
        for result in runner:
            course.check()  # before anything of this result is kept
            result = replace(result, sources=course.digest, identity=notes.get(Path(result.file), ""))
            result = _record(recorder, result)  # first: a result file means "recorded", so resume may trust it
            if result.status != GRADER_ERROR or "recorded" not in result.message:
                _write_atomically(result_path(out_dir, Path(result.file), submissions_dir),
                                  json.dumps(signed(result, key), indent=1))
            results.append(result)
            bar.set_postfix_str(f"{result.student_id}: {result.status} in {result.seconds:.1f}s")
            bar.update()
            if len(results) == expected:  # the last one: the report is drawn while the workers stop
                painter.start(adjustments.for_reports(results, db_path), out_dir)
    finally:
        bar.close()
        if hasattr(runner, "close"):
            runner.close()  # ends the workers even when the batch stops early
        recorder.close()  # everything sent is in the gradebook
    formgrader.write_course_or_say_why(out_dir, results, db_path)  # nbgrader's formgrader on this gradebook
    write_reports(adjustments.for_reports(results, db_path), out_dir, painter)  # with changes made in formgrader
    return results


def write_reports(results: list[GradeResult], out_dir: Path, painter=None) -> None:
    """grades.csv first (it must exist whatever happens), then feedback pages and the class report;
    a result whose page cannot be made costs that page only."""
    from autograder import report

    report.write_grades_csv(results, out_dir / "grades.csv")
    for result in results:
        try:
            path = report.feedback_path(out_dir, result)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(report.feedback_html(result), encoding="utf-8", errors="replace")
        except Exception:
            print(f"no feedback page for {result.file}:\n{traceback.format_exc(limit=5)}", file=sys.stderr)
    try:
        report.class_report(results, out_dir, painter)
    except Exception:
        print(f"the class report could not be written:\n{traceback.format_exc(limit=5)}", file=sys.stderr)

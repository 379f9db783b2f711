"""Grade a folder of handed-in notebooks: one row per file, resumable, in parallel if asked.

Each finished result is written at once to ``OUT/results/`` (atomically) and to the gradebook,
so an interrupted run loses nothing: the next run skips files whose result is already there for
the same file content and the same lab sources. Workers (local processes or a Dask cluster) only
grade and return plain data; this process alone writes files and the gradebook.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from tqdm.auto import tqdm

from autograder import gradebook, report
from autograder.grade import Settings, grade_file
from autograder.intake import DUPLICATE, file_sha256, find_submissions, read_submission
from autograder.labs import all_labs


def lab_sources_digest() -> str:
    """Changes whenever a solution notebook (and so a hidden test or a point value) changes."""
    digest = hashlib.sha256()
    for lab in all_labs().values():
        digest.update(lab.solution_path.read_bytes())
    return digest.hexdigest()[:16]


def result_path(out_dir: Path, file: Path, submissions_dir: Path) -> Path:
    relative = Path(file).resolve().relative_to(Path(submissions_dir).resolve())
    return Path(out_dir) / "results" / (str(relative).replace(os.sep, "__") + ".json")


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(handle.name, path)


def plan(submissions_dir: Path) -> tuple[list[tuple[Path, str]], list[dict], list[str]]:
    """Files to grade, rows for files that lose to another file of the same student and lab,
    and the labs the files belong to.

    Two files for one student and one lab: the one whose name sorts last is graded (LMS
    exports add ``-1``, ``-2``... or a later timestamp to resubmissions); the others get a
    ``duplicate`` row naming it.
    """
    found = find_submissions(submissions_dir)
    by_key: dict[tuple[str, str], list[Path]] = defaultdict(list)
    for path, student in found:
        sub = read_submission(path, student)
        by_key[(student, sub.lab_id or f"?{path.name}")].append(path)
    to_grade, duplicates = [], []
    for (student, lab_id), paths in by_key.items():
        paths = sorted(paths, key=lambda p: p.name)
        to_grade.append((paths[-1], student))
        for loser in paths[:-1]:
            duplicates.append({"student_id": student, "file": str(loser), "lab": lab_id, "status": DUPLICATE,
                               "message": f"another file of this student for this lab was graded instead: {paths[-1].name}",
                               "score": None, "max_score": None, "parts": {}, "integrity": [], "cells": [], "seconds": 0.0})
    lab_ids = sorted({lab_id for _, lab_id in by_key if not lab_id.startswith("?")})
    return sorted(to_grade), duplicates, lab_ids


def _run_local(jobs, settings: Settings, workers: int):
    if workers <= 1:
        for path, student in jobs:
            yield grade_file(path, student, settings)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(grade_file, path, student, settings) for path, student in jobs]
        for future in as_completed(futures):
            yield future.result()


def _run_dask(jobs, settings: Settings, scheduler: str):
    from distributed import Client, as_completed as dask_completed

    with Client(scheduler) as client:
        futures = [client.submit(grade_file, path, student, settings, pure=False) for path, student in jobs]
        for future in dask_completed(futures):
            yield future.result()


def grade_folder(submissions_dir: Path, out_dir: Path, settings: Settings = Settings(), workers: int = 1,
                 scheduler: str | None = None, db_path: Path | None = None, progress: bool = True) -> list[dict]:
    """Grade every notebook under ``submissions_dir`` into ``out_dir``; returns all results."""
    submissions_dir, out_dir = Path(submissions_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    db_path = Path(db_path or out_dir / "gradebook.db")
    sources = lab_sources_digest()
    settings = Settings(settings.limits, settings.data_dir, settings.part_seconds,
                        tuple(settings.denied) + (submissions_dir.resolve(), out_dir.resolve(), db_path.resolve()))
    jobs, results, lab_ids = plan(submissions_dir)
    gradebook.prepare(db_path, lab_ids)
    pending = []
    for path, student in jobs:
        saved = result_path(out_dir, path, submissions_dir)
        if saved.exists():
            previous = json.loads(saved.read_text(encoding="utf-8"))
            if previous.get("sha256") == file_sha256(path) and previous.get("sources") == sources:
                gradebook.record(db_path, previous)  # idempotent: a run stopped right after the file was written
                results.append(previous)
                continue
        pending.append((path, student))
    runner = _run_dask(pending, settings, scheduler) if scheduler else _run_local(pending, settings, workers)
    bar = tqdm(total=len(pending), desc="grading", unit="nb", disable=not progress, file=sys.stderr)
    if len(pending) < len(jobs):
        bar.write(f"resuming: {len(jobs) - len(pending)} results already in {out_dir / 'results'}")
    for result in runner:
        result["sources"] = sources
        gradebook.record(db_path, result)  # first: a result file means "recorded", so resume may trust it
        _write_atomically(result_path(out_dir, Path(result["file"]), submissions_dir), json.dumps(result, indent=1))
        results.append(result)
        bar.set_postfix_str(f"{result['student_id']}: {result['status']} in {result['seconds']:.1f}s")
        bar.update()
    bar.close()
    write_reports(results, out_dir)
    return results


def write_reports(results: list[dict], out_dir: Path) -> None:
    table = report.grades_table(results)
    table.to_csv(out_dir / "grades.csv", index=False)
    for result in results:
        path = report.feedback_path(out_dir, result)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(report.feedback_html(result), encoding="utf-8")
    report.class_report(results, out_dir)

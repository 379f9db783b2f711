"""Instructors' and TAs' pages: class progress per lab and per part (the class report's figures,
from the counted attempts, as results arrive), the queue, each student's attempts and feedback,
re-grading (instructors only), and the downloads: grades.csv and the nbgrader gradebook."""
from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path
from statistics import median

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, Response
from sqlalchemy import select
from sqlalchemy.orm import undefer
from starlette.background import BackgroundTask

from autograder.labs import all_labs
from autograder.reports.report import class_report, feedback_html
from autograder.service import queue, tokens
from autograder.service.auth import SESSION_COOKIE, csrf_ok, set_cookie, start_session
from autograder.service.database import Database
from autograder.service.dependencies import DB, Held, Limits, Scratch, Settings, Staff, Wake
from autograder.service.models import INSTRUCTOR, PENDING, Student, Submission
from autograder.service.results import (
    attempts,
    counted_attempts,
    grade_result,
    grading_seconds,
    waits,
    write_gradebook,
    write_grades_csv,
)
from autograder.service.routes.pages import (
    FORGED,
    address,
    feedback_page,
    held,
    render,
    see_other,
    signin_form,
    too_many,
)

router = APIRouter(prefix="/dashboard", include_in_schema=False)
REFRESH = 10


@router.get("/signin")
def signin_page(request: Request):
    return signin_form(request, "dashboard_signin.html")


def _text_field(form, name: str) -> str | None:
    """A form's text field, None when it is empty or missing (or a file: never with max_files=0)."""
    value = form.get(name)
    return value if isinstance(value, str) and value else None


@router.post("/signin")
async def sign_in(request: Request, db: DB, settings: Settings, limits: Limits, holds: Held):
    form = await request.form(max_files=0, max_fields=5)
    if not csrf_ok(request, form.get("csrf"), None):
        return signin_form(request, "dashboard_signin.html", 403, message=FORGED)
    name, where = str(form.get("username") or ""), address(request)
    wait = limits.wait(account=name, address=where)
    if wait:
        return await held(
            holds, where, too_many(request, "dashboard_signin.html", wait), wait
        )

    def check():
        with db.reading() as session:
            account = tokens.account_of(session, name, str(form.get("password") or ""))
            return account.username if account else None

    username = await run_in_threadpool(check)
    if username is None:
        limits.failed(account=name, address=where)
        return signin_form(
            request, "dashboard_signin.html", 401, message="Wrong user name or password."
        )
    hours = settings.session_hours
    value = await run_in_threadpool(start_session, db, "password", hours, None, username)
    response = see_other("/dashboard")
    set_cookie(response, SESSION_COOKIE, value, max_age=int(hours * 3600))
    return response


def _duration(seconds) -> str:
    if seconds is None:
        return "–"
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _counted(session, counted: str) -> list:
    """The counted attempts' results (the class report's input)."""
    chosen = counted_attempts(attempts(session), counted)
    return [grade_result(chosen[key]) for key in sorted(chosen)]


def _figure_key(results) -> str:
    return hashlib.sha256(
        repr(sorted((r.student_id, r.lab, r.score) for r in results)).encode()
    ).hexdigest()[:16]


@router.get("")
def dashboard(request: Request, principal: Staff, db: DB, settings: Settings, live: bool = False):
    with db.reading() as session:
        results = _counted(session, settings.counted)
        counts = queue.stats(session)
        recent = grading_seconds(session)
        waited = waits(session)
        slots = sum(grader.workers for grader in queue.graders_ready(session))
        students = session.query(Student).filter(Student.on_roster.is_(True)).count()
        lms = None
        if settings.lti_config is not None:  # LTI 1.3: the LMS gradebook's posts (docs/LTI.md)
            from autograder.service.lti.scores import status

            lms = status(session)
    labs = []
    for lab in all_labs().values():
        mine = [r for r in results if r.lab == lab.lab_id and r.graded]
        parts = []
        for part in lab.parts:
            full = sum(1 for r in mine if part.part_id in r.parts and r.parts[part.part_id].passed)
            parts.append(
                {
                    "part_id": part.part_id,
                    "points": part.points,
                    "share": full / len(mine) if mine else 0,
                    "missed": len(mine) - full,
                }
            )
        deadline = settings.deadlines.get(lab.lab_id)
        labs.append(
            {
                "lab_id": lab.lab_id,
                "title": lab.title,
                "graded": len(mine),
                "max_score": lab.max_score,
                "mean": sum(r.score for r in mine) / len(mine) if mine else 0,
                "parts": parts,
                "deadline": f"{deadline.due:%Y-%m-%d %H:%M} UTC "
                            f"({'late marked' if deadline.late == 'mark' else 'late refused'})"
                if deadline
                else "",
            }
        )
    stats = {
        **counts,
        "slots": slots,
        "recent": len(recent),
        "grading_time": _duration(median(recent) if recent else None),
        "wait": _duration(median(waited) if waited else None),
        "oldest": _duration(counts["oldest"]),
    }
    return render(
        request,
        "dashboard.html",
        200,
        principal,
        labs=labs,
        stats=stats,
        students=students,
        refresh=REFRESH if live else None,  # only when asked for (WCAG 2.2.1)
        every=REFRESH,
        lms=lms,
        counted=settings.counted,
        figure=_figure_key(results) if any(r.graded for r in results) else None,
    )


def _report(db: Database, scratch: Path, counted: str, name: str) -> Path | None:
    """The class report (``scores.png``, ``class_report.md``) of the counted attempts, drawn once
    per set of results."""
    with db.reading() as session:
        results = [r for r in _counted(session, counted) if r is not None]
    if not results:
        return None
    folder = scratch / f"report-{_figure_key(results)}"
    if not (folder / name).exists():
        folder.mkdir(exist_ok=True)
        class_report(results, folder)
        for older in scratch.glob("report-*"):  # only the newest results' report is kept
            if older != folder:
                shutil.rmtree(older, ignore_errors=True)
    return folder / name


@router.get("/scores.png")
def scores(_staff: Staff, db: DB, settings: Settings, scratch: Scratch):
    path = _report(db, scratch, settings.counted, "scores.png")
    return FileResponse(path, media_type="image/png") if path else Response(status_code=404)


@router.get("/class_report.md")
def report_text(_staff: Staff, db: DB, settings: Settings, scratch: Scratch):
    path = _report(db, scratch, settings.counted, "class_report.md")
    if path is None:
        return Response("No graded submission yet.\n", media_type="text/plain; charset=utf-8")
    return Response(path.read_text(encoding="utf-8"), media_type="text/markdown; charset=utf-8")


@router.get("/students")
def students(request: Request, principal: Staff, db: DB, settings: Settings):
    with db.reading() as session:
        rows = attempts(session, with_results=False)
        people = list(session.scalars(select(Student).order_by(Student.student_id)))
    chosen = counted_attempts(rows, settings.counted)
    tried: dict[str, int] = {}
    for row in rows:
        tried[row.student_id] = tried.get(row.student_id, 0) + 1
    table = [
        {
            "student_id": s.student_id,
            "name": s.name,
            "on_roster": s.on_roster,
            "attempts": tried.get(s.student_id, 0),
            "counted": {
                lab: row for (student, lab), row in chosen.items() if student == s.student_id
            },
        }
        for s in people
    ]
    return render(request, "students.html", 200, principal, students=table, labs=list(all_labs()))


@router.get("/students/{student_id}")
def student(request: Request, student_id: str, principal: Staff, db: DB, settings: Settings):
    with db.reading() as session:
        person = session.get(Student, student_id)
        rows = attempts(session, student_id=student_id, with_results=False)
    if person is None:
        return render(request, "base.html", 404, principal, message="No such student.")
    counted_ids = {
        row.id for row in counted_attempts(rows, settings.counted).values()
    }
    return render(
        request,
        "student_detail.html",
        200,
        principal,
        student=person,
        rows=rows,
        counted_ids=counted_ids,
    )


@router.get("/submissions/{submission_id}")
def submission(
    request: Request, submission_id: int, principal: Staff, db: DB, paused: bool = False
):
    with db.reading() as session:
        row = session.get(Submission, submission_id)
        position = queue.position(session, row) if row is not None else 0
    if row is None:
        return render(request, "base.html", 404, principal, message="No such submission.")
    return render(
        request,
        "submission.html",
        200,
        principal,
        row=row,
        position=position,
        staff=True,
        back=f"/dashboard/students/{row.student_id}",
        back_text=row.student_id,
        refresh=2 if row.status in PENDING and not paused else None,
        feedback_url=f"/dashboard/submissions/{row.id}/feedback",
    )


@router.get("/submissions/{submission_id}/feedback")
def submission_feedback(request: Request, submission_id: int, principal: Staff, db: DB):
    with db.reading() as session:
        row = session.get(Submission, submission_id, options=[undefer(Submission.result)])
        result = grade_result(row) if row is not None else None
    if result is None:
        return render(request, "base.html", 404, principal, message="No result (yet).")
    return feedback_page(feedback_html(result))


@router.post("/regrade")
async def regrade(request: Request, principal: Staff, db: DB, wake: Wake):
    form = await request.form(max_files=0, max_fields=5)
    if not csrf_ok(request, form.get("csrf"), principal):
        return render(request, "base.html", 403, principal, message=FORGED)
    if principal.kind != INSTRUCTOR:
        return render(
            request, "base.html", 403, principal, message="Only instructors can re-grade."
        )
    student_id, lab = _text_field(form, "student"), _text_field(form, "lab")
    if lab is not None and lab not in all_labs():
        return render(request, "base.html", 422, principal, message="No such lab.")
    if student_id is None and lab is None:
        return render(
            request, "base.html", 422, principal, message="Say which student or lab to re-grade."
        )
    await run_in_threadpool(queue.regrade, db, student_id, lab)
    wake()
    return see_other(f"/dashboard/students/{student_id}" if student_id else "/dashboard")


def _download(db: Database, scratch: Path, counted: str, name: str):
    with db.reading() as session:
        results = _counted(session, counted)
    folder = Path(tempfile.mkdtemp(prefix="download-", dir=scratch))
    path = (write_grades_csv if name == "grades.csv" else write_gradebook)(results, folder / name)
    return path, folder


def _remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


@router.get("/grades.csv")
def grades_csv(_staff: Staff, db: DB, settings: Settings, scratch: Scratch):
    path, folder = _download(db, scratch, settings.counted, "grades.csv")
    return FileResponse(
        path,
        media_type="text/csv; charset=utf-8",
        filename="grades.csv",
        background=BackgroundTask(_remove, folder),
    )


@router.get("/gradebook.db")
def gradebook(_staff: Staff, db: DB, settings: Settings, scratch: Scratch):
    path, folder = _download(db, scratch, settings.counted, "gradebook.db")
    return FileResponse(path, media_type="application/vnd.sqlite3", filename="gradebook.db",
                        background=BackgroundTask(_remove, folder))

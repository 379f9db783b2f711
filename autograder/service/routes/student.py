"""Students' pages: sign in with the token, upload a notebook, follow it through the queue, read the
same feedback page the command line writes, and the history of attempts with their scores."""
from __future__ import annotations

import json

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from sqlalchemy.orm import undefer

from autograder.reports.report import feedback_html
from autograder.service import queue, tokens
from autograder.service.auth import (
    SESSION_COOKIE,
    Principal,
    csrf_ok,
    end_session,
    set_cookie,
    start_session,
)
from autograder.service.database import Database
from autograder.service.dependencies import (
    DB,
    Admit,
    Held,
    Limits,
    Settings,
    Visitor,
    Wake,
    WebStudent,
)
from autograder.service.models import PENDING, Submission
from autograder.service.results import attempts, counted_attempts, grade_result
from autograder.service.routes.api import receive_notebook, refused_before_reading
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
from autograder.service.settings import ServiceSettings
from autograder.service.submissions import grading_used

router = APIRouter(include_in_schema=False)


@router.get("/")
def home(request: Request, principal: Visitor):
    if principal is not None:
        return see_other("/me" if principal.student else "/dashboard")
    return signin_form(request, "signin.html")


@router.post("/signin")
async def sign_in(request: Request, db: DB, settings: Settings, limits: Limits, holds: Held):
    form = await request.form(max_files=0, max_fields=5)
    if not csrf_ok(request, form.get("csrf"), None):
        return signin_form(request, "signin.html", 403, message=FORGED)
    token, where = str(form.get("token") or "").strip(), address(request)
    wait = limits.wait(address=where)
    if wait:
        return await held(holds, where, too_many(request, "signin.html", wait), wait)

    def check():
        with db.reading() as session:
            student = tokens.student_of(session, token)
            return student.student_id if student else None

    student_id = await run_in_threadpool(check)
    if student_id is None:
        limits.failed(address=where)
        return signin_form(
            request,
            "signin.html",
            401,
            message="This token was not accepted: copy it again from your instructor's message (it "
                    "is case-sensitive).",
        )
    value = await run_in_threadpool(start_session, db, "token", settings.session_hours, student_id)
    response = see_other("/me")
    set_cookie(response, SESSION_COOKIE, value, max_age=int(settings.session_hours * 3600))
    return response


@router.post("/signout")
async def sign_out(request: Request, principal: Visitor, db: DB):
    form = await request.form(max_files=0, max_fields=5)
    if principal is None or not csrf_ok(request, form.get("csrf"), principal):
        return see_other("/")
    await run_in_threadpool(end_session, db, request.cookies.get(SESSION_COOKIE))
    response = see_other("/")
    response.delete_cookie(SESSION_COOKIE, path="/", secure=True, httponly=True, samesite="lax")
    return response


def _my_page(
    request: Request,
    db: Database,
    settings: ServiceSettings,
    principal: Principal,
    status: int = 200,
    message: str | None = None,
):
    with db.reading() as session:
        rows = attempts(session, student_id=principal.id, with_results=False)
        used = grading_used(session, principal.id)
    counted_ids = {row.id for row in counted_attempts(rows, settings.counted).values()}
    rate = (
        f"{settings.rate_limit} submissions per {settings.rate_window / 3600:g} hour(s)"
        if settings.rate_limit
        else ""
    )
    return render(
        request,
        "me.html",
        status,
        principal,
        rows=rows,
        counted_ids=counted_ids,
        message=message,
        rate=rate,
        budget=(used / 60, settings.grading_budget / 60) if settings.grading_budget else None,
        counted=settings.counted,
        deadlines=sorted(settings.deadlines.items()),
    )


@router.get("/me")
def my_submissions(request: Request, principal: WebStudent, db: DB, settings: Settings):
    return _my_page(request, db, settings, principal)


@router.post("/me/submissions")
async def upload(
    request: Request, principal: WebStudent, db: DB, settings: Settings, wake: Wake,
    admission: Admit, holds: Held,
):
    refused = await refused_before_reading(request, db, settings, admission, holds, principal)
    if refused is not None:
        detail = json.loads(bytes(refused.body))["detail"]
        page = await run_in_threadpool(
            _my_page, request, db, settings, principal, refused.status_code, detail
        )
        if "connection" in refused.headers:  # its body unread (holds.py)
            page.headers["Connection"] = refused.headers["connection"]
        return page
    async with request.form(max_files=1, max_fields=10) as form:
        if not csrf_ok(request, form.get("csrf"), principal):
            return await run_in_threadpool(
                _my_page, request, db, settings, principal, 403, FORGED
            )
        row = await receive_notebook(db, settings, wake, admission, principal, form)
    if isinstance(row, JSONResponse):
        answer = json.loads(bytes(row.body))
        return await run_in_threadpool(
            _my_page, request, db, settings, principal, row.status_code, answer["detail"]
        )
    return see_other(f"/me/submissions/{row.id}")


def _mine(db: Database, principal: Principal, submission_id: str, with_result: bool = False):
    if not (submission_id.isascii() and submission_id.isdigit()) or len(submission_id) > 18:
        return None, 0
    with db.reading() as session:
        options = [undefer(Submission.result)] if with_result else []
        row = session.get(Submission, int(submission_id), options=options)
        if row is None or row.student_id != principal.id:
            return None, 0
        return row, queue.position(session, row)


@router.get("/me/submissions/{submission_id}", name="student_submission")
def my_submission(
    request: Request, submission_id: str, principal: WebStudent, db: DB, paused: bool = False
):
    row, position = _mine(db, principal, submission_id)
    if row is None:
        return render(
            request, "base.html", 404, principal, message="No submission of yours has this number."
        )
    return render(
        request,
        "submission.html",
        200,
        principal,
        row=row,
        position=position,
        back="/me",
        back_text="your submissions",
        refresh=2 if row.status in PENDING and not paused else None,  # stoppable (WCAG 2.2.1)
        feedback_url=f"/me/submissions/{row.id}/feedback",
    )


@router.get("/me/submissions/{submission_id}/feedback")
def my_feedback(request: Request, submission_id: str, principal: Visitor, db: DB):
    student = principal if principal is not None and principal.student else None
    row, _ = _mine(db, student, submission_id, with_result=True) if student else (None, 0)
    result = grade_result(row) if row is not None else None
    if result is None:
        return render(request, "base.html", 404, student, message="No feedback here (yet).")
    return feedback_page(feedback_html(result))

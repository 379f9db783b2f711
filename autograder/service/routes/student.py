"""Students' pages: sign in with the token, upload a notebook, follow it through the queue, read the
same feedback page the command line writes, and the history of attempts with their scores."""
from __future__ import annotations

import json

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from sqlalchemy.orm import undefer

from autograder.report import feedback_html
from autograder.service import queue, tokens
from autograder.service.auth import SESSION_COOKIE, csrf_ok, end_session, set_cookie, start_session
from autograder.service.models import PENDING, Submission
from autograder.service.results import attempts, counted_attempts, grade_result
from autograder.service.routes.api import receive_notebook, refused_before_reading
from autograder.service.submissions import grading_used
from autograder.service.routes.pages import feedback_page, render, see_other, signed_in, signin_form

router = APIRouter(include_in_schema=False)
FORGED = ("this form did not come from this site's own page (or it is too old): reload the page "
          "and try again")


@router.get("/")
def home(request: Request):
    principal = signed_in(request)
    if principal is not None:
        return see_other("/me" if principal.student else "/dashboard")
    return signin_form(request, "signin.html")


@router.post("/signin")
async def sign_in(request: Request):
    form = await request.form(max_files=0, max_fields=5)
    if not csrf_ok(request, form.get("csrf"), None):
        return signin_form(request, "signin.html", 403, message=FORGED)
    token = str(form.get("token") or "").strip()
    db = request.app.state.db

    def check():
        with db.reading() as session:
            student = tokens.student_of(session, token)
            return student.student_id if student else None

    student_id = await run_in_threadpool(check)
    if student_id is None:
        return signin_form(
            request,
            "signin.html",
            401,
            message="This token was not accepted: copy it again from your instructor's message (it "
                    "is case-sensitive).",
        )
    value = await run_in_threadpool(
        start_session, db, "token", request.app.state.settings.session_hours, student_id
    )
    response = see_other("/me")
    set_cookie(
        response,
        SESSION_COOKIE,
        value,
        max_age=int(request.app.state.settings.session_hours * 3600),
    )
    return response


@router.post("/signout")
async def sign_out(request: Request):
    form = await request.form(max_files=0, max_fields=5)
    principal = await run_in_threadpool(signed_in, request)
    if principal is None or not csrf_ok(request, form.get("csrf"), principal):
        return see_other("/")
    await run_in_threadpool(end_session, request.app.state.db, request.cookies.get(SESSION_COOKIE))
    response = see_other("/")
    response.delete_cookie(SESSION_COOKIE, path="/", secure=True, httponly=True, samesite="lax")
    return response


def _student(request: Request):
    principal = signed_in(request)
    return principal if principal is not None and principal.student else None


def _my_page(request: Request, principal, status: int = 200, message: str | None = None):
    settings = request.app.state.settings
    with request.app.state.db.reading() as session:
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
def my_submissions(request: Request):
    principal = _student(request)
    if principal is None:
        return see_other("/")
    return _my_page(request, principal)


@router.post("/me/submissions")
async def upload(request: Request):
    principal = await run_in_threadpool(_student, request)
    if principal is None:
        return see_other("/")
    refused = await refused_before_reading(request, principal)
    if refused is not None:
        detail = json.loads(bytes(refused.body))["detail"]
        return await run_in_threadpool(_my_page, request, principal, refused.status_code, detail)
    async with request.form(max_files=1, max_fields=10) as form:
        if not csrf_ok(request, form.get("csrf"), principal):
            return await run_in_threadpool(_my_page, request, principal, 403, FORGED)
        row = await receive_notebook(request, principal, form)
    if isinstance(row, JSONResponse):
        answer = json.loads(bytes(row.body))
        return await run_in_threadpool(
            _my_page, request, principal, row.status_code, answer["detail"]
        )
    return see_other(f"/me/submissions/{row.id}")


def _mine(request: Request, principal, submission_id: str, with_result: bool = False):
    if not submission_id.isdigit() or len(submission_id) > 18:
        return None, 0
    with request.app.state.db.reading() as session:
        options = [undefer(Submission.result)] if with_result else []
        row = session.get(Submission, int(submission_id), options=options)
        if row is None or row.student_id != principal.id:
            return None, 0
        return row, queue.position(session, row)


@router.get("/me/submissions/{submission_id}", name="student_submission")
def my_submission(request: Request, submission_id: str):
    principal = _student(request)
    if principal is None:
        return see_other("/")
    row, position = _mine(request, principal, submission_id)
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
        refresh=2 if row.status in PENDING else None,
        feedback_url=f"/me/submissions/{row.id}/feedback",
    )


@router.get("/me/submissions/{submission_id}/feedback")
def my_feedback(request: Request, submission_id: str):
    principal = _student(request)
    row, _ = (
        _mine(request, principal, submission_id, with_result=True)
        if principal is not None
        else (None, 0)
    )
    result = grade_result(row) if row is not None else None
    if result is None:
        return render(request, "base.html", 404, principal, message="No feedback here (yet).")
    return feedback_page(feedback_html(result))

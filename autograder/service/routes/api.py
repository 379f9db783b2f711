"""The HTTP API, version 1: the contract for every client (the notebooks' Submit cell, the web page,
scripts, an LMS). Documented in docs/SERVICE.md and at ``/docs`` (OpenAPI).

    POST /api/v1/submissions        Authorization: Bearer TOKEN; multipart field "notebook" -> 202
    GET  /api/v1/submissions/{id}   the caller's submission (404 for anyone else's)
    GET  /api/v1/submissions        the caller's submissions, newest first
    GET  /health                    200 once the service can grade, else 503
"""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.orm import undefer
from starlette.datastructures import UploadFile

from autograder.service import queue
from autograder.service.admission import Busy
from autograder.service.auth import Principal, identify
from autograder.service.models import PENDING, Submission
from autograder.service.results import attempts
from autograder.service.submissions import Refused, accept, budget_check, describe, window_text
from autograder.service.uploads import save_upload

router = APIRouter()

UNAUTHORIZED = (
    "a missing or wrong token: send your personal token as 'Authorization: Bearer TOKEN' "
    "(it is in the message your instructor sent you)"
)
NOT_FOUND = "no submission of yours has this id"


def error(
    status: int, detail: str, word: str, headers: dict | None = None, **extra
) -> JSONResponse:
    return JSONResponse(
        {"detail": detail, "status": word, **extra}, status_code=status, headers=headers
    )


def caller(request: Request) -> Principal | None:
    principal = identify(request, request.app.state.db, request.app.state.api_auth)
    return principal if principal is not None and principal.student else None


def _unauthorized() -> JSONResponse:
    return error(401, UNAUTHORIZED, "unauthorized", {"WWW-Authenticate": "Bearer"})


def _refusal(request: Request, principal: Principal) -> JSONResponse | None:
    state = request.app.state
    over = state.admission.over_rate(principal.id)
    if over is not None:
        count, allowed, retry = over
        return error(
            429,
            f"{count} of your uploads were refused in the last "
            f"{window_text(state.settings.rate_window)}, the most allowed: you "
            f"can submit again at {allowed:%Y-%m-%d %H:%M:%S} UTC (in {retry} s)",
            "rate_limited",
            {"Retry-After": str(retry)},
            retry_after=retry,
            next_allowed_at=allowed.isoformat() + "Z",
        )
    try:
        budget_check(state.db, state.settings, principal.id)
    except Refused as refused:
        return error(
            refused.status_code, refused.detail, refused.word, refused.headers, **refused.extra
        )
    return None


async def refused_before_reading(request: Request, principal: Principal) -> JSONResponse | None:
    """The answer to an upload refused before a byte of its body is parsed (the student's refused
    uploads are at the rate, or their grading time for the hour is used), else None. The body is
    drained unparsed, so that the client reads the answer."""
    refusal = await run_in_threadpool(_refusal, request, principal)
    if refusal is not None:
        async for _ in request.stream():
            pass
    return refusal


async def receive_notebook(
    request: Request, principal: Principal, form
) -> Submission | JSONResponse:
    """Queue the form's ``notebook`` for ``principal`` (shared by the API and the upload page)."""
    state = request.app.state
    upload = form.get("notebook")
    if not isinstance(upload, UploadFile):
        return error(
            422,
            "no notebook: send the .ipynb file as the multipart form field 'notebook'",
            "no_notebook",
        )
    admission = state.admission
    try:
        async with admission.turn(principal.id, upload.size or 0):
            path = await save_upload(upload, state.settings.max_upload_bytes)
            try:
                row = await run_in_threadpool(
                    accept, state.db, state.settings, principal.id, path, upload.filename or "",
                    admission.refused_times(principal.id),
                )
            except Refused as refused:
                if refused.word != "rate_limited":  # it cost a parse: it counts against the rate
                    admission.refused(principal.id)
                return error(
                    refused.status_code, refused.detail, refused.word, refused.headers,
                    **refused.extra,
                )
            finally:
                path.unlink(missing_ok=True)
    except Busy:
        return error(
            429,
            "your previous upload is still being checked: wait for its answer, then submit again",
            "busy",
            {"Retry-After": "2"},
            retry_after=2,
        )
    state.wake()
    return row


@router.post(
    "/api/v1/submissions",
    status_code=202,
    summary="Hand in a notebook",
    responses={
        401: {"description": "a missing or wrong token"},
        413: {"description": "an upload over the cap"},
        422: {"description": "not a notebook of a lab (status: the command line's status word)"},
        429: {
            "description": "rate-limited, or a submission of this lab still waiting (Retry-After)"
        },
    },
)
async def submit(request: Request):
    principal = await run_in_threadpool(caller, request)
    if principal is None:
        return _unauthorized()
    refused = await refused_before_reading(request, principal)
    if refused is not None:
        return refused
    async with request.form(max_files=1, max_fields=10) as form:
        row = await receive_notebook(request, principal, form)
    if isinstance(row, JSONResponse):
        return row
    with request.app.state.db.reading() as session:
        return JSONResponse(
            {
                "id": row.id,
                "status": row.status,
                "lab": row.lab,
                "position": queue.position(session, row),
                "late": row.late,
                "url": str(request.url_for("student_submission", submission_id=row.id)),
            },
            status_code=202,
        )


def _own(request: Request, principal: Principal, submission_id: str):
    if not submission_id.isdigit() or len(submission_id) > 18:
        return None
    with request.app.state.db.reading() as session:
        row = session.get(Submission, int(submission_id), options=[undefer(Submission.result)])
        if row is None or row.student_id != principal.id:
            return None
        return describe(session, row)


@router.get(
    "/api/v1/submissions/{submission_id}",
    summary="One of your submissions: its status, then its result",
)
def submission(request: Request, submission_id: str):
    principal = caller(request)
    if principal is None:
        return _unauthorized()
    data = _own(request, principal, submission_id)
    return JSONResponse(data) if data is not None else error(404, NOT_FOUND, "not_found")


@router.get("/api/v1/submissions", summary="Your submissions, newest first")
def submissions(request: Request):
    principal = caller(request)
    if principal is None:
        return _unauthorized()
    with request.app.state.db.reading() as session:
        return JSONResponse(
            [
                describe(session, row, feedback=False)
                for row in attempts(session, student_id=principal.id)
            ]
        )


@router.get("/health", summary="200 once the service can grade")
def health(request: Request):
    try:
        with request.app.state.db.reading() as session:
            graders = queue.graders_ready(session)
            waiting = session.query(Submission).filter(Submission.status.in_(PENDING)).count()
    except (OperationalError, InterfaceError):
        return JSONResponse({"status": "database_unavailable", "database": "unreachable",
                             "grading": "unknown"}, status_code=503)
    workers = sum(g.workers for g in graders)
    data = {
        "status": "ok" if workers else "no workers" if graders else "starting",
        "database": "ok",
        "grading": "ok" if workers else "no workers" if graders else "starting",
        "graders": workers,
        "workers": workers,  # that can grade now: a Dask cluster's that passed the check
        "queue": waiting,
        "max_upload_bytes": request.app.state.settings.max_upload_bytes,
    }
    return JSONResponse(data, status_code=200 if workers else 503)

"""The HTTP API, version 1: the contract for every client (the notebooks' Submit cell, the web page,
scripts, an LMS). Documented in docs/SERVICE.md and at ``/openapi.json`` (every answer's body is a
model of schemas.py).

    POST /api/v1/submissions        Authorization: Bearer TOKEN; multipart field "notebook" -> 202
    GET  /api/v1/submissions/{id}   the caller's submission (404 for anyone else's)
    GET  /api/v1/submissions        the caller's submissions, newest first
    GET  /health                    200 once the service can grade, else 503
"""
from __future__ import annotations

from typing import Literal, cast

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.orm import undefer
from starlette.datastructures import UploadFile

from autograder.service import queue
from autograder.service.admission import LARGE, Admission, Busy
from autograder.service.auth import Principal
from autograder.service.database import Database
from autograder.service.dependencies import DB, Admit, ApiStudent, Held, Settings, Wake
from autograder.service.holds import HELD_PER_STUDENT, Holds
from autograder.service.models import PENDING, Submission
from autograder.service.results import attempts
from autograder.service.schemas import Health, Queued, Status, SubmissionSummary, problems
from autograder.service.settings import ServiceSettings
from autograder.service.submissions import Refused, accept, budget_check, describe, window_text
from autograder.service.uploads import save_upload

router = APIRouter()

UNAUTHORIZED = (
    "a missing or wrong token: send your personal token as 'Authorization: Bearer TOKEN' "
    "(it is in the message your instructor sent you)"
)
NOT_FOUND = "no submission of yours has this id"
SIGNED = {401: "a missing or wrong token"}


def error(
    status: int, detail: str, word: str, headers: dict | None = None, **extra
) -> JSONResponse:
    return JSONResponse(
        {"detail": detail, "status": word, **extra}, status_code=status, headers=headers
    )


def unauthorized() -> JSONResponse:
    return error(401, UNAUTHORIZED, "unauthorized", {"WWW-Authenticate": "Bearer"})


def _refusal(
    db: Database, settings: ServiceSettings, admission: Admission, principal: Principal
) -> JSONResponse | None:
    over = admission.over_rate(principal.id)
    if over is not None:
        count, allowed, retry = over
        return error(
            429,
            f"{count} of your uploads were refused in the last "
            f"{window_text(settings.rate_window)}, the most allowed: you "
            f"can submit again at {allowed:%Y-%m-%d %H:%M:%S} UTC (in {retry} s)",
            "rate_limited",
            {"Retry-After": str(retry)},
            retry_after=retry,
            next_allowed_at=allowed.isoformat() + "Z",
        )
    try:
        budget_check(db, settings, principal.id)
    except Refused as refused:
        return error(
            refused.status_code, refused.detail, refused.word, refused.headers, **refused.extra
        )
    return None


async def refused_before_reading(
    request: Request,
    db: Database,
    settings: ServiceSettings,
    admission: Admission,
    holds: Holds,
    principal: Principal,
) -> JSONResponse | None:
    """The answer to an upload refused before a byte of its body is parsed (the student's refused
    uploads are at the rate, or their grading time for the hour is used), else None. The answer is
    held first (holds.py: the body waits unread, its sender stalled), then the body is drained
    unparsed, so that the client reads the answer; when the student already has all the answers
    they may held, it goes at once and closes the connection, the body unread."""
    refusal = await run_in_threadpool(_refusal, db, settings, admission, principal)
    if refusal is not None:
        retry = refusal.headers.get("retry-after", "0")
        wait = float(retry) if retry.isdigit() else 0
        declared = request.headers.get("content-length", "")
        small = declared.isdigit() and int(declared) <= LARGE
        if await holds.hold(f"student:{principal.id}", wait, HELD_PER_STUDENT) and small:
            async for _ in request.stream():
                pass
        else:
            refusal.headers["Connection"] = "close"
    return refusal


async def receive_notebook(
    db: Database, settings: ServiceSettings, wake, admission: Admission, principal: Principal, form
) -> Submission | JSONResponse:
    """Queue the form's ``notebook`` for ``principal`` (shared by the API and the upload page)."""
    upload = form.get("notebook")
    if not isinstance(upload, UploadFile):
        return error(
            422,
            "no notebook: send the .ipynb file as the multipart form field 'notebook'",
            "no_notebook",
        )
    try:
        async with admission.turn(principal.id, upload.size or 0):
            path = await save_upload(upload, settings.max_upload_bytes)
            try:
                row = await run_in_threadpool(
                    accept, db, settings, principal.id, path, upload.filename or "",
                    admission.refused_times(principal.id),
                )
            except Refused as refused:
                # it cost a parse: it counts against the rate, a lab's own rate too (else a
                # student at a lab's rate, sending again, is parsed and refused forever unheld)
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
    wake()
    return row


@router.post(
    "/api/v1/submissions",
    status_code=202,
    summary="Hand in a notebook",
    response_model=Queued,
    responses=problems(
        401,
        403,
        _413="an upload over the cap",
        _422="not a notebook of a lab (status: the command line's status word)",
        _429="rate-limited, or a submission of this lab still waiting (Retry-After)",
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["notebook"],
                        "properties": {"notebook": {"type": "string", "format": "binary"}},
                    }
                }
            },
        }
    },
)
async def submit(
    request: Request, principal: ApiStudent, db: DB, settings: Settings, wake: Wake,
    admission: Admit, holds: Held,
):
    refused = await refused_before_reading(request, db, settings, admission, holds, principal)
    if refused is not None:
        return refused
    async with request.form(max_files=1, max_fields=10) as form:
        row = await receive_notebook(db, settings, wake, admission, principal, form)
    if isinstance(row, JSONResponse):
        return row
    with db.reading() as session:
        return Queued(
            id=row.id,
            status=cast(Status, row.status),
            lab=row.lab,
            position=queue.position(session, row),
            late=row.late,
            url=f"{settings.public_url}/me/submissions/{row.id}"
            if settings.public_url
            else str(request.url_for("student_submission", submission_id=row.id)),
        )


def _own(db: Database, principal: Principal, submission_id: str) -> dict | None:
    if not (submission_id.isascii() and submission_id.isdigit()) or len(submission_id) > 18:
        return None
    with db.reading() as session:
        row = session.get(Submission, int(submission_id), options=[undefer(Submission.result)])
        if row is None or row.student_id != principal.id:
            return None
        return describe(session, row)


@router.get(
    "/api/v1/submissions/{submission_id}",
    summary="One of your submissions: its status, then its result",
    response_model=SubmissionSummary,
    responses=problems(401, _404=NOT_FOUND),
)
def submission(submission_id: str, principal: ApiStudent, db: DB):
    data = _own(db, principal, submission_id)
    return data if data is not None else error(404, NOT_FOUND, "not_found")


@router.get(
    "/api/v1/submissions",
    summary="Your submissions, newest first",
    response_model=list[SubmissionSummary],
    responses=problems(401),
)
def submissions(principal: ApiStudent, db: DB):
    with db.reading() as session:
        return [
            describe(session, row, feedback=False)
            for row in attempts(session, student_id=principal.id)
        ]


@router.get(
    "/health",
    summary="200 once the service can grade",
    response_model=Health,
    responses={503: {"model": Health, "description": "not ready to grade, or what is down"}},
)
def health(db: DB, settings: Settings):
    try:
        with db.reading() as session:
            graders = queue.graders_ready(session)
            waiting = session.query(Submission).filter(Submission.status.in_(PENDING)).count()
    except (OperationalError, InterfaceError):
        down = Health(
            status="database_unavailable", database="unreachable", grading="unknown",
            graders=0, workers=0, queue=0, max_upload_bytes=settings.max_upload_bytes,
        )
        return JSONResponse(down.model_dump(), status_code=503)
    workers = sum(g.workers for g in graders)
    state: Literal["ok", "no workers", "starting"] = (
        "ok" if workers else "no workers" if graders else "starting"
    )
    data = Health(
        status=state,
        database="ok",
        grading=state,
        graders=workers,
        workers=workers,  # that can grade now: a Dask cluster's that passed the check
        queue=waiting,
        max_upload_bytes=settings.max_upload_bytes,
    )
    return JSONResponse(data.model_dump(), status_code=200 if workers else 503)

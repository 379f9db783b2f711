"""What a route is given (FastAPI's ``Depends``): the database, the settings, who signed in.

A route names what it needs in its signature (``db: DB``, ``student: ApiStudent``, ``staff:
Staff``) instead of reading ``request.app.state`` and checking the caller itself. A caller who is
not signed in never reaches the route's body: the API answers 401 (:class:`Unauthorized`), a page
sends the browser to its sign-in form (:class:`SignInFirst`); ``app.py`` turns both into answers.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Callable

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from jinja2 import Environment
from pylti1p3.tool_config import ToolConfDict

from autograder.service.admission import Admission
from autograder.service.auth import Principal, identify
from autograder.service.database import Database
from autograder.service.holds import Holds
from autograder.service.settings import ServiceSettings
from autograder.service.signin_limits import SignInLimits


class Unauthorized(Exception):
    """The API's caller has no valid token (answered 401 with ``WWW-Authenticate: Bearer``)."""


class SignInFirst(Exception):
    """A page's visitor is not signed in as whom the page is for (answered 303 to ``url``)."""

    def __init__(self, url: str):
        super().__init__(url)
        self.url = url


def database(request: Request) -> Database:
    return request.app.state.db


def settings(request: Request) -> ServiceSettings:
    return request.app.state.settings


def templates(request: Request) -> Environment:
    return request.app.state.templates


def scratch(request: Request) -> Path:
    """A folder of the process's own for drawings and downloads (removed when it stops)."""
    return request.app.state.scratch


def wake(request: Request) -> Callable[[], None]:
    """Tells the grading process that a job is waiting."""
    return request.app.state.wake


def signin_limits(request: Request) -> SignInLimits:
    return request.app.state.signin_limits


def holds(request: Request) -> Holds:
    """The refusals answered slowly (429s from memory: sign-ins past their limits, uploads past the
    rate)."""
    return request.app.state.holds


def admission(request: Request) -> Admission:
    """Who may upload now, and how many of their uploads were refused (checked before a parse)."""
    return request.app.state.admission


def lti_tool(request: Request) -> ToolConfDict:
    """The LMS platforms this tool is registered with (pylti1p3's configuration; serve --lti)."""
    return request.app.state.lti


DB = Annotated[Database, Depends(database)]
Admit = Annotated[Admission, Depends(admission)]
Held = Annotated[Holds, Depends(holds)]
LtiTool = Annotated[ToolConfDict, Depends(lti_tool)]
Limits = Annotated[SignInLimits, Depends(signin_limits)]
Settings = Annotated[ServiceSettings, Depends(settings)]
Wake = Annotated[Callable[[], None], Depends(wake)]
Scratch = Annotated[Path, Depends(scratch)]

# Declares the API's security scheme in the OpenAPI document; who the caller is comes from the
# app's authenticators (app.state.api_auth), which read the same header.
_bearer = HTTPBearer(auto_error=False, description="the student's personal token")


def api_student(
    request: Request,
    db: DB,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    principal = identify(request, db, request.app.state.api_auth)
    if principal is None or not principal.student:
        raise Unauthorized()
    return principal


def web_principal(request: Request, db: DB) -> Principal | None:
    """Whoever a page's visitor is signed in as (a session cookie), or None."""
    return identify(request, db, request.app.state.web_auth)


def web_student(principal: Annotated[Principal | None, Depends(web_principal)]) -> Principal:
    if principal is None or not principal.student:
        raise SignInFirst("/")
    return principal


def web_staff(principal: Annotated[Principal | None, Depends(web_principal)]) -> Principal:
    if principal is None or principal.student:
        raise SignInFirst("/dashboard/signin")
    return principal


ApiStudent = Annotated[Principal, Depends(api_student)]
Visitor = Annotated[Principal | None, Depends(web_principal)]
WebStudent = Annotated[Principal, Depends(web_student)]
Staff = Annotated[Principal, Depends(web_staff)]

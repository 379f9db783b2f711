"""The web application: FastAPI, its routers, the upload cap, security headers, and the grading
process it keeps running (started with the app, restarted if it ends, stopped with it)."""
from __future__ import annotations

import logging
import multiprocessing
import os
import tempfile
import threading
import time
from contextlib import asynccontextmanager
from multiprocessing.process import BaseProcess
from pathlib import Path

from starlette.datastructures import MutableHeaders
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse
from sqlalchemy.exc import InterfaceError, OperationalError
from jinja2 import Environment, FileSystemLoader

from autograder.service import grading_process as grader
from autograder.service.admission import Admission
from autograder.service.auth import bearer_token, session_cookie
from autograder.service.database import Database
from autograder.service.dependencies import SignInFirst, Unauthorized
from autograder.service.routes.pages import PAGE_POLICY
from autograder.service.settings import ServiceSettings
from autograder.service.holds import Holds
from autograder.service.signin_limits import SignInLimits
from autograder.service.uploads import TooLarge, UploadCap, too_large_message

log = logging.getLogger("autograder.service")
# /docs and /redoc (serve --api-docs): FastAPI's pages, their scripts and styles from its CDN.
DOCS_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline' https://cdn.jsdelivr.net; style-src "
    "'unsafe-inline' https://cdn.jsdelivr.net https://fonts.googleapis.com; font-src "
    "https://fonts.gstatic.com; img-src 'self' data: https://fastapi.tiangolo.com "
    "https://cdn.redoc.ly; worker-src blob:; connect-src 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'; object-src 'none'"
)
TEMPLATES = Path(__file__).parent / "templates"
# every answer while the database is unreachable (restarted, the network): nothing is lost, and
# the jobs being graded go on
DATABASE_DOWN = {
    "detail": "the grading service cannot reach its database for a moment; nothing you handed in "
              "is lost: try again in a minute",
    "status": "database_unavailable",
}


class GraderKeeper:
    """Keeps one grading process running (a fresh process, single-threaded, so that it may fork its
    workers): restarts it if it ends, at once after a course change, after a pause otherwise."""

    def __init__(self, settings: ServiceSettings):
        self.settings = settings
        self.context = multiprocessing.get_context("spawn")
        self.reader, self.writer = self.context.Pipe(duplex=False)
        os.set_blocking(self.writer.fileno(), False)
        self.process: BaseProcess | None = None
        self.stopping = threading.Event()
        # The grading process dies with the thread that started it (PR_SET_PDEATHSIG), so this
        # thread lives as long as the server.
        self.thread = threading.Thread(target=self._keep, name="grader-keeper", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _keep(self) -> None:
        while not self.stopping.is_set():
            started = time.monotonic()
            self.process = self.context.Process(
                target=grader.main,
                args=(self.settings, self.reader),
                name="autograder-grader",
                daemon=False,
            )
            self.process.start()
            while self.process.is_alive() and not self.stopping.is_set():
                self.process.join(0.5)
            if self.stopping.is_set():
                break
            code = self.process.exitcode
            log.warning("the grading process ended (exit code %s): starting a fresh one", code)
            if code != grader.COURSE_CHANGED_EXIT and time.monotonic() - started < 10:
                self.stopping.wait(5)
        if self.process is not None and self.process.is_alive():
            self.process.terminate()
            self.process.join(30)
            if self.process.is_alive():
                self.process.kill()

    def wake(self) -> None:
        """Tell the grading process that a job is waiting (it also looks by itself)."""
        try:
            self.writer.send_bytes(b"!")
        except (BlockingIOError, OSError, ValueError):
            pass  # the pipe is full (it is woken already) or closed

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(60)


class SecurityHeaders:
    """ASGI middleware: the headers every answer carries, added as the answer starts. A plain ASGI
    class, not Starlette's ``BaseHTTPMiddleware``, which wraps every chunk a request body arrives in
    with a task group of its own: under a class's uploads at a deadline (and an attacker's 19.5 MB
    files) that wrapping cost the web process more CPU than the uploads themselves."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        https = scope.get("scheme") == "https"

        async def with_headers(message):
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("X-Content-Type-Options", "nosniff")
                headers.setdefault("Referrer-Policy", "same-origin")
                headers.setdefault("Cache-Control", "no-store")
                headers.setdefault(
                    "Content-Security-Policy",
                    DOCS_POLICY if path in ("/docs", "/redoc") else PAGE_POLICY,
                )
                # the LTI pages an LMS frames
                if "frame-ancestors *" not in headers["Content-Security-Policy"]:
                    headers.setdefault("X-Frame-Options", "SAMEORIGIN")
                # over HTTPS: served so by uvicorn, or by a proxy of --forwarded-allow-ips that
                # says so (X-Forwarded-Proto), which uvicorn has already made the request's scheme
                if https:
                    headers.setdefault("Strict-Transport-Security", "max-age=31536000")
            await send(message)

        await self.app(scope, receive, with_headers)


def create_app(settings: ServiceSettings, grade: bool = True) -> FastAPI:
    """The application; ``grade=False``: no grading process (a web process beside graders run
    elsewhere)."""
    from autograder.service.routes import api, dashboard, student
    from autograder.service.routes.api import unauthorized as api_unauthorized

    db = Database(settings.db_url)
    keeper = GraderKeeper(settings) if grade else None
    lti = poster = None
    # LTI 1.3 (docs/LTI.md): the LMS's routes, and scores posted to its gradebook
    if settings.lti_config is not None:
        from autograder.service.lti import scores, tool

        lti = tool.load(settings.lti_config)
        poster = scores.ScorePoster(db, lti, settings.counted)

    # the dashboard's drawings, downloads
    scratch = tempfile.TemporaryDirectory(prefix="autograder-service-")

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if keeper is not None:
            keeper.start()
        if poster is not None:
            poster.start()
        try:
            yield
        finally:
            if poster is not None:
                poster.stop()
            if keeper is not None:
                keeper.stop()
            db.close()
            scratch.cleanup()

    app = FastAPI(
        title="Autograder service",
        version="1",
        description="Hand in a notebook and get its grade and feedback in seconds. See "
                    "docs/SERVICE.md.",
        lifespan=lifespan,
        # The reference pages load their scripts from a CDN: off unless asked (serve --api-docs);
        # /openapi.json, the contract itself, is always served.
        docs_url="/docs" if settings.api_docs else None,
        redoc_url="/redoc" if settings.api_docs else None,
    )
    app.state.settings, app.state.db, app.state.scratch, app.state.lti = (
        settings,
        db,
        Path(scratch.name),
        lti,
    )
    app.state.signin_limits = SignInLimits()
    app.state.holds = Holds(settings.hold_refusals)
    app.state.admission = Admission(settings.rate_limit, settings.rate_window)
    app.state.wake = keeper.wake if keeper is not None else (lambda: None)
    # Pluggable sign-in: who a request is from. An LTI launch route adds nothing here: it starts a
    # web session.
    app.state.api_auth = [bearer_token]
    app.state.web_auth = [session_cookie]
    app.state.templates = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True)
    app.add_middleware(UploadCap, limit=settings.max_upload_bytes)

    app.add_middleware(SecurityHeaders)

    @app.exception_handler(Unauthorized)
    async def unauthorized(_request: Request, _error: Unauthorized):
        return api_unauthorized()

    @app.exception_handler(SignInFirst)
    async def sign_in_first(_request: Request, error: SignInFirst):
        return RedirectResponse(error.url, status_code=303)

    @app.exception_handler(TooLarge)
    async def too_large(request: Request, _error: TooLarge):
        return JSONResponse(
            {"detail": too_large_message(settings.max_upload_bytes), "status": "file_too_large"},
            status_code=413,
            headers={"Connection": "close"},
        )

    @app.exception_handler(OperationalError)
    @app.exception_handler(InterfaceError)
    async def database_down(request: Request, error: Exception):
        log.warning("the database is unreachable: %s", str(error).splitlines()[0][:200])
        return JSONResponse(DATABASE_DOWN, status_code=503, headers={"Retry-After": "10"})

    app.include_router(api.router)
    app.include_router(student.router)
    app.include_router(dashboard.router)
    if lti is not None:
        from autograder.service.lti import routes as lti_routes

        app.include_router(lti_routes.router)
    return app

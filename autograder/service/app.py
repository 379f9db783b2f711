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

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import InterfaceError, OperationalError
from jinja2 import Environment, FileSystemLoader

from autograder.service import grader
from autograder.service.admission import Admission
from autograder.service.auth import bearer_token, session_cookie
from autograder.service.database import Database
from autograder.service.settings import ServiceSettings
from autograder.service.uploads import TooLarge, UploadCap, too_large_message

log = logging.getLogger("autograder.service")
TEMPLATES = Path(__file__).parent / "templates"

# Pages run no script at all; the feedback page is shown sandboxed, as a document of its own origin.
PAGE_POLICY = (
    "default-src 'self'; script-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' "
    "data:; frame-src 'self'; frame-ancestors 'self'; form-action 'self'; base-uri 'none'; "
    "object-src 'none'"
)
# every answer while the database is unreachable (restarted, the network): nothing is lost, and
# the jobs being graded go on
DATABASE_DOWN = {
    "detail": "the grading service cannot reach its database for a moment; nothing you handed in "
              "is lost: try again in a minute",
    "status": "database_unavailable",
}
FEEDBACK_POLICY = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'; sandbox"


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


def create_app(settings: ServiceSettings, grade: bool = True) -> FastAPI:
    """The application; ``grade=False``: no grading process (a web process beside graders run
    elsewhere)."""
    from autograder.service.routes import api, dashboard, student

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
    )
    app.state.settings, app.state.db, app.state.scratch, app.state.lti = (
        settings,
        db,
        Path(scratch.name),
        lti,
    )
    app.state.admission = Admission(settings.rate_limit, settings.rate_window)
    app.state.wake = keeper.wake if keeper is not None else (lambda: None)
    # Pluggable sign-in: who a request is from. An LTI launch route adds nothing here: it starts a
    # web session.
    app.state.api_auth = [bearer_token]
    app.state.web_auth = [session_cookie]
    app.state.templates = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True)
    app.add_middleware(UploadCap, limit=settings.max_upload_bytes)

    @app.middleware("http")
    async def security_headers(request: Request, call_next):
        response = await call_next(request)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("Cache-Control", "no-store")
        if request.url.path not in ("/docs", "/redoc"):
            response.headers.setdefault("Content-Security-Policy", PAGE_POLICY)
            # the LTI pages an LMS frames
            if "frame-ancestors *" not in response.headers["Content-Security-Policy"]:
                response.headers.setdefault("X-Frame-Options", "SAMEORIGIN")
        if settings.tls:
            response.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
        return response

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
        from autograder.service.routes import lti as lti_routes

        app.include_router(lti_routes.router)
    return app

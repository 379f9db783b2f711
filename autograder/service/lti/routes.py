"""LTI 1.3: the routes an LMS calls (docs/LTI.md).

    GET|POST /lti/login         OIDC login initiation: checks the platform is registered, keeps a
                                nonce, redirects back
    POST     /lti/launch        the signed launch: a student is signed in as their roster entry; an
                                instructor gets the lab's page (roster from the LMS); a
                                deep-linking request gets the lab chooser
    POST     /lti/deep-link     the lab the instructor chose, sent back to the LMS signed
    POST     /lti/roster        the roster built from the LMS course's members (NRPS)
    POST     /lti/enter         a launch shown in a frame goes on in a window of its own (a
                                one-time code in the form's body, good only in the browser
                                that launched: a cookie set with the code)
    GET      /lti/jwks          the tool's public keys
    GET      /lti/canvas.json   the tool's LTI 1.3 configuration as Canvas pastes it

A refused launch gets a page that says why and what to do, and leaves nothing behind: no web
session, no gradebook link, no roster change, and its sign-in state deleted.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from typing import Any, cast
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.lineitem import LineItem
from pylti1p3.tool_config import ToolConfDict

from autograder.labs import all_labs
from autograder.service.auth import SESSION_COOKIE, same_origin, set_cookie, start_session
from autograder.service.lti.adapter import Connector, Cookies, Launch, Login, StarletteRequest
from autograder.service.lti.identity import (
    CLAIM_NAMES,
    CUSTOM,
    find_student,
    launch_identity,
    merge_roster,
    roster_row,
)
from autograder.service.lti.refusals import ASK, Refused, refusal
from autograder.service.lti.scores import record_link
from autograder.service.lti.storage import DatabaseStorage, OnceSessions
from autograder.service.database import Database
from autograder.service.dependencies import DB, LtiTool, Settings
from autograder.service.routes.pages import render, see_other
from autograder.service.settings import ServiceSettings

router = APIRouter(prefix="/lti", include_in_schema=False)
log = logging.getLogger("autograder.service.lti")
PRESENTATION = "https://purl.imsglobal.org/spec/lti/claim/launch_presentation"
CONTEXT = "https://purl.imsglobal.org/spec/lti/claim/context"
ENTER_SECONDS = 120
ENTER_COOKIE = "autograder_lti_enter"  # the launching browser's half of a framed launch's code
AGAIN_FROM_LMS = "Go back to the LMS and open the assignment again."
# The LMS shows these pages in a frame of its own (Canvas does, always for deep linking). Framing is
# harmless here: every one of them answers a signed launch (or a form of that answer) and nothing
# else.
FRAMED_POLICY = (
    "default-src 'self'; script-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' "
    "data:; form-action 'self'; frame-ancestors *; base-uri 'none'; object-src 'none'"
)
SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score",
          "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"]


def _page(
    request: Request, template: str, status: int = 200, policy: str = FRAMED_POLICY, **context
) -> HTMLResponse:
    response = render(request, template, status, **context)
    response.headers["Content-Security-Policy"] = policy
    return response


def _refused(
    request: Request, what: str, todo: str, status: int = 403, error: Exception | None = None
) -> HTMLResponse:
    from pylti1p3.exception import LtiException, OIDCException, ToolConfException

    expected = error is None or isinstance(error, (LtiException, OIDCException, ToolConfException))
    log.warning(
        "LTI %s refused: %s%s",
        request.url.path,
        what,
        f" ({type(error).__name__}: {error})" if error else "",
        exc_info=not expected,
    )
    return _page(request, "lti_refused.html", status, what=what, todo=todo)


def _tools(db: Database):
    """(a launch-state store, its session service)."""
    storage = DatabaseStorage(db)
    return storage, OnceSessions(storage)


def public(settings: ServiceSettings, path: str) -> str:
    """The tool's address for ``path``, from its configuration (serve --public-url), never from a
    request's Host header: the LMS keeps these links and shows them to others."""
    return f"{settings.public_url}{path}"


def _labs() -> dict[str, tuple[str, float]]:
    return {
        lab_id: (lab.title, sum(part.points for part in lab.parts))
        for lab_id, lab in all_labs().items()
    }


def _lab(name: str) -> str:
    labs = _labs()
    if not name:
        raise Refused(
            "This LMS link does not say which lab it is for.",
            "Your instructor picks the lab when adding the tool to the assignment (deep linking), "
            "or gives the link a custom parameter lab=<lab id> (docs/LTI.md). " + ASK,
            400,
        )
    if name not in labs:
        raise Refused(
            f"This LMS link is for a lab named {name[:100]!r}, which this course does not have "
            f"(its labs: {', '.join(labs)}).",
            ASK,
            404,
        )
    return name


def _staff(message: Launch) -> bool:
    return (
        message.check_teacher_access()
        or message.check_teaching_assistant_access()
        or message.check_staff_access()
    )


def _forget(storage: DatabaseStorage, message: Launch, state: str | None) -> None:
    """The launch's state, which pylti1p3 saved as it validated, deleted: a refused launch leaves
    nothing behind, and a student's launch is not read again (an instructor's is, by the forms of
    its page)."""
    storage.take(message.get_launch_id())
    if state:
        storage.take(f"lti1p3-{state}-id-token-hash")


def _claims(launch_data) -> dict[str, Any]:
    """The launch's claims (the id_token's JSON body) as a plain dict: pylti1p3 types them as a
    TypedDict, whose ``.get`` of a claim it does not list (custom, context) gives ``object``."""
    return cast(dict[str, Any], launch_data)


@router.get("/jwks")
def jwks(tool: LtiTool):
    return JSONResponse(tool.get_jwks(), headers={"Cache-Control": "max-age=300"})


@router.get("/canvas.json")
def canvas_configuration(settings: Settings):
    """What Canvas's developer key takes as 'Paste JSON' (docs/LTI.md)."""
    from autograder.course import current

    base = public(settings, "")
    launch = f"{base}/lti/launch"
    return JSONResponse(
        {
            "title": f"{current().name} grading service",
            "description": "Hand in a lab notebook, get its grade and feedback.",
            "oidc_initiation_url": f"{base}/lti/login",
            "target_link_uri": launch,
            "public_jwk_url": f"{base}/lti/jwks",
            "scopes": SCOPES,
            "extensions": [
                {
                    "platform": "canvas.instructure.com",
                    "privacy_level": "public",
                    "domain": urlsplit(base).netloc,
                    "settings": {
                        "placements": [
                            {
                                "placement": "assignment_selection",
                                "message_type": "LtiDeepLinkingRequest",
                                "target_link_uri": launch,
                            },
                            {
                                "placement": "link_selection",
                                "message_type": "LtiDeepLinkingRequest",
                                "target_link_uri": launch,
                            },
                        ]
                    },
                }
            ],
        }
    )


@router.api_route("/login", methods=["GET", "POST"])
async def login(request: Request, settings: Settings, config: LtiTool, db: DB):
    form = await request.form(max_files=0, max_fields=20) if request.method == "POST" else None
    _storage, sessions = _tools(db)
    adapted = StarletteRequest(request, form)
    oidc = Login(adapted, config, session_service=sessions, cookie_service=Cookies(adapted))
    try:
        return await run_in_threadpool(oidc.redirect, public(settings, "/lti/launch"))
    except Exception as error:
        return _refused(request, *refusal(error), error=error)


@router.post("/launch", name="lti_launch")
async def launch(request: Request, settings: Settings, db: DB, config: LtiTool):
    form = await request.form(max_files=0, max_fields=20)
    storage, sessions = _tools(db)
    adapted = StarletteRequest(request, form)
    message = Launch(
        adapted,
        config,
        session_service=sessions,
        cookie_service=Cookies(adapted),
        service_connector_cls=Connector,
    )
    try:
        # verifies everything (fetches the platform's keys)
        claims = _claims(await run_in_threadpool(message.get_launch_data))
    except Exception as error:
        return _refused(request, *refusal(error), error=error)
    try:
        if message.is_deep_link_launch():
            if not _staff(message):
                raise Refused("Only an instructor chooses the lab of an LMS assignment.", ASK)
            return _page(
                request,
                "lti_choose.html",
                labs=_labs(),
                launch_id=message.get_launch_id(),
                course_title=(claims.get(CONTEXT) or {}).get("title", ""),
            )
        if not message.is_resource_launch():
            raise Refused("This kind of LTI message is not one this service takes.", ASK, 400)
        lab = _lab(str((claims.get(CUSTOM) or {}).get("lab") or "").strip())
        if _staff(message):
            return await run_in_threadpool(
                _instructor_page, request, settings, message, claims, lab
            )
        if not message.check_student_access():
            raise Refused("Your role in this LMS course is neither student nor instructor.", ASK)
        answer = await run_in_threadpool(_student_launch, request, db, settings, claims, lab)
        # not needed again: not kept
        await run_in_threadpool(_forget, storage, message, adapted.get_param("state"))
        return answer
    except Refused as refused:
        await run_in_threadpool(_forget, storage, message, adapted.get_param("state"))
        return _refused(request, refused.what, refused.todo, refused.status)


def _student_launch(
    request: Request, db: Database, settings: ServiceSettings, claims: dict, lab: str
):
    way = settings.lti_identity
    value = launch_identity(claims, way)
    if not value:
        raise Refused(
            f"The LMS did not send your {CLAIM_NAMES[way]}, by which this service finds you on the "
            "class roster.",
            "Your instructor lets the LMS share it with this tool (docs/LTI.md). " + ASK,
        )
    with db.reading() as session:
        student = find_student(session, value, way)
        student_id, name = (student.student_id, student.name) if student is not None else (None, "")
    if student_id is None:
        raise Refused(
            f"You ({value[:100]}) are not on this course's roster of the grading service.",
            "Your instructor adds you to the roster (or builds it from the LMS course). " + ASK,
        )
    record_link(db, student_id, lab, claims, public(settings, ""))
    if (claims.get(PRESENTATION) or {}).get("document_target") == "iframe":
        # A frame of the LMS's page cannot keep this site's sign-in cookie (third-party cookies): a
        # window of its own can. The page's form opens it, the one-time code in its body (never in
        # a URL, which logs and histories keep), and the code works only beside the cookie set
        # here: in the browser that launched.
        code, browser = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        DatabaseStorage(db).set_value(
            _enter_key(code), {"student": student_id, "browser": _digest(browser)},
            exp=ENTER_SECONDS,
        )
        page = _page(
            request, "lti_open.html", name=name or student_id, title=_labs()[lab][0], code=code
        )
        page.set_cookie(ENTER_COOKIE, browser, max_age=ENTER_SECONDS, path="/lti/enter",
                        secure=True, httponly=True, samesite="none")
        return page
    return _signed_in(db, settings, student_id)


def _signed_in(db: Database, settings: ServiceSettings, student_id: str):
    hours = settings.session_hours
    value = start_session(db, "lti", hours, student_id=student_id)
    response = see_other("/me")
    set_cookie(response, SESSION_COOKIE, value, max_age=int(hours * 3600))
    response.delete_cookie(ENTER_COOKIE, path="/lti/enter", secure=True, httponly=True,
                           samesite="none")
    return response


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _enter_key(code: str) -> str:
    return "enter-" + _digest(code)


@router.post("/enter")
async def enter(request: Request, db: DB, settings: Settings):
    """The window a framed launch opens: its code (the form's body) and the launching browser's
    cookie sign the student in, once, within 2 minutes."""
    form = await request.form(max_files=0, max_fields=5)
    code = str(form.get("code") or "")
    browser = request.cookies.get(ENTER_COOKIE, "")
    storage = DatabaseStorage(db)
    if not same_origin(request) or len(code) >= 100:
        return _refused(
            request, "This form did not come from this site's own page.", AGAIN_FROM_LMS
        )
    entry = await run_in_threadpool(storage.get_value, _enter_key(code))
    if not isinstance(entry, dict):
        return _refused(
            request, "This link was already used, or it is more than 2 minutes old.", AGAIN_FROM_LMS
        )
    if not browser or not hmac.compare_digest(_digest(browser), str(entry.get("browser"))):
        return _refused(
            request,
            "This window is not in the browser that opened the assignment in the LMS (or that "
            "browser keeps this site's cookies apart from the LMS's page).",
            "Open the assignment in the LMS again, in this browser; if this page comes back, ask "
            "your instructor to set the tool to open in a new tab (docs/LTI.md).",
        )
    if not await run_in_threadpool(storage.take, _enter_key(code)):
        return _refused(
            request, "This link was already used, or it is more than 2 minutes old.", AGAIN_FROM_LMS
        )
    return await run_in_threadpool(_signed_in, db, settings, str(entry["student"]))


def _instructor_page(
    request: Request,
    settings: ServiceSettings,
    message: Launch,
    claims: dict,
    lab: str,
    status: int = 200,
    note: str = "",
):
    title, points = _labs()[lab]
    return _page(
        request,
        "lti_instructor.html",
        status,
        lab=lab,
        title=title,
        points=points,
        note=note,
        launch_id=message.get_launch_id(),
        nrps=message.has_nrps(),
        ags=bool(claims.get("https://purl.imsglobal.org/spec/lti-ags/claim/endpoint")),
        course_title=(claims.get(CONTEXT) or {}).get("title", ""),
        identity=CLAIM_NAMES[settings.lti_identity],
    )


def _restored(request: Request, form, config: ToolConfDict, db: Database) -> Launch:
    """The instructor's launch that this form belongs to (its id is the form's proof: only that page
    has it)."""
    _storage, sessions = _tools(db)
    launch_id = str(form.get("launch_id") or "")
    if (
        not same_origin(request)
        or not launch_id.startswith("lti1p3-launch-")
        or len(launch_id) > 100
    ):
        raise Refused(
            "This form did not come from this site's own page.", "Open the tool from the LMS again."
        )
    adapted = StarletteRequest(request, form)
    try:
        # from_cache makes an instance of the class it is called on (pylti1p3 annotates it as
        # giving a MessageLaunch)
        message = cast(Launch, Launch.from_cache(
            launch_id,
            adapted,
            config,
            session_service=sessions,
            cookie_service=Cookies(adapted),
            service_connector_cls=Connector,
        ))
    except Exception:
        raise Refused(
            "This page is more than an hour old, or was already used.",
            "Open the tool from the LMS again.",
        ) from None
    if not _staff(message):
        raise Refused("Only an instructor can do this.", ASK)
    return message


@router.post("/deep-link")
async def deep_link(request: Request, settings: Settings, db: DB, config: LtiTool):
    form = await request.form(max_files=0, max_fields=10)
    try:
        message = await run_in_threadpool(_restored, request, form, config, db)
        if not message.is_deep_link_launch():
            raise Refused(
                "This page was not opened to choose a lab.",
                "Open the tool from the LMS again.",
                400,
            )
        lab = _lab(str(form.get("lab") or "").strip())
    except Refused as refused:
        return _refused(request, refused.what, refused.todo, refused.status)
    title, points = _labs()[lab]
    lineitem = (
        LineItem()
        .set_tag("bpe-labs")
        .set_resource_id(lab)
        .set_label(title)
        .set_score_maximum(points)
    )
    resource = (DeepLinkResource().set_url(public(settings, "/lti/launch")).set_title(title)
                .set_custom_params({"lab": lab}).set_lineitem(lineitem))
    deep_link = message.get_deep_link()
    signed = await run_in_threadpool(deep_link.get_response_jwt, [resource])
    # pylti1p3 keeps the request's settings there
    return_url = deep_link._deep_link_settings["deep_link_return_url"]
    # one answer per request
    await run_in_threadpool(DatabaseStorage(db).take, message.get_launch_id())
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(return_url))
    nonce = secrets.token_urlsafe(16)
    policy = (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; form-action "
        f"{origin}; frame-ancestors *; base-uri 'none'"
    )
    return _page(
        request,
        "lti_return.html",
        policy=policy,
        return_url=return_url,
        jwt=signed,
        title=title,
        nonce=nonce,
    )


@router.post("/roster")
async def roster(request: Request, settings: Settings, db: DB, config: LtiTool):
    form = await request.form(max_files=0, max_fields=10)

    def build(message: Launch) -> str:
        way = settings.lti_identity
        if way == "custom":
            raise Refused(
                "The LMS's course members carry no custom parameter: with --lti-identity custom, "
                "load the roster from a CSV (serve --roster).",
                "",
                400,
            )
        members = message.get_nrps().get_members()
        rows = [row for row in (roster_row(member, way) for member in members) if row is not None]
        with db.writing() as session:
            added, updated = merge_roster(session, rows, way)
        return (
            f"The roster now has the LMS course's {len(rows)} active learner(s): {added} added, "
            f"{updated} already there (updated). Nobody was removed."
        )

    try:
        message = await run_in_threadpool(_restored, request, form, config, db)
        if not message.has_nrps():
            raise Refused(
                "This LMS did not offer its course's members (Names and Role Provisioning "
                "Services).",
                "Turn the service on for this tool in the LMS (docs/LTI.md), or load a roster CSV.",
                400,
            )
        note = await run_in_threadpool(build, message)
    except Refused as refused:
        return _refused(request, refused.what, refused.todo, refused.status)
    except Exception as error:  # the LMS refused or is away
        return _refused(
            request,
            f"The LMS did not give its course's members ({type(error).__name__}: "
            f"{str(error)[:200]}).",
            "Try again later, or load a roster CSV (serve --roster).",
            502,
        )
    claims = _claims(message.get_launch_data())
    lab = str((claims.get(CUSTOM) or {}).get("lab") or "")
    if lab not in _labs():
        return _page(request, "lti_refused.html", 200, what=note, todo="")
    return _instructor_page(request, settings, message, claims, lab, note=note)

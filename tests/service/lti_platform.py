"""A real LTI 1.3 *platform* (the LMS's side) for the tests, built on ``lti1p3platform`` and served
by uvicorn in a thread of the test process: it starts OIDC logins, signs launches (resource links
and deep-linking requests) with its own key, publishes its JWKS, issues access tokens to the tool
(checking the tool's signed assertion against the tool's JWKS), keeps a gradebook of line items and
scores (Assignment and Grade Services), lists its course's members (Names and Role Provisioning
Services) and takes deep-linking answers (checking the tool's signature).

It is the LMS of the tests, not a stand-in written to agree with the tool: every signature, token
and claim is made and checked by lti1p3platform, PyJWT and jwcrypto. The tests turn its knobs to
play a misbehaving or hostile LMS (another key, an expired message, an unknown issuer or
deployment).
"""
from __future__ import annotations

import html
import json
import threading
import time
import uuid
from dataclasses import dataclass, field

import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from lti1p3platform.exceptions import LineItemNotFoundException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request as PlatformRequest
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, NamesRoleProvisioningService

from service_helpers import free_port

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
LIS = "https://purl.imsglobal.org/spec/lti/claim/lis"
COURSE = Context(id="course-1", label="BPE", title="Tokenization 101")


def key_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return private.decode(), public.decode()


@dataclass
class User:
    user_id: str
    name: str
    email: str | None
    roles: list[str]
    sourcedid: str | None = None


@dataclass
class Link:
    """A resource link of the course: an assignment that opens the tool."""

    link_id: str
    custom: dict = field(default_factory=dict)
    lineitem_id: str | None = None


class Config(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, registration: Registration) -> None:
        self._registration = registration

    def get_registration_by_params(self, **kwargs) -> Registration:
        return self._registration


class DictRequest(PlatformRequest):
    def build_metadata(self, request: dict) -> dict:
        return request


class PlatformLogin(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs) -> None:
        self._lti_message_hint = json.dumps(kwargs)

    def get_redirect(self, url: str) -> RedirectResponse:
        return RedirectResponse(url, status_code=302)


class PlatformLaunch(LTIAdvantageMessageLaunchAbstract):
    """The launch the platform signs after the tool's OIDC
    redirect comes back (its preflight response)."""

    def __init__(self, preflight: dict, platform: "Platform"):
        super().__init__(DictRequest({"get_data": preflight, "form_data": {}}), platform.config)
        self.platform = platform

    def prepare_launch(self, preflight: dict) -> None:
        hint = json.loads(preflight["lti_message_hint"])
        user = self.platform.users[hint["user"]]
        if preflight.get("login_hint") != user.user_id:
            raise PermissionError("the login hint is not this launch's user")
        self.set_user_data(user.user_id, user.roles, user.name, user.email)
        if user.sourcedid:
            self.set_extra_claims({LIS: {"person_sourcedid": user.sourcedid}})
        self.set_launch_context_claim(COURSE.id, context_title=COURSE.title,
                                      context_label=COURSE.label)
        self.set_launch_presentation_claim(document_target=hint.get("target", "window"))
        self.set_nrps(f"{self.platform.url}/memberships")
        self.set_id_token_expiration(self.platform.id_token_seconds)
        if hint.get("deep"):
            self.set_dl(f"{self.platform.url}/deep-link-return", title="BPE lab",
                        accept_types={"ltiResourceLink"}, extra_data={"opaque": "kept by the tool"})
            return
        link = self.platform.links[hint["link"]]
        self.set_resource_link_claim(link.link_id)
        self.set_custom_parameters_claim(link.custom)
        if link.lineitem_id:
            self.set_ags(f"{self.platform.url}/lineitems",
                         f"{self.platform.url}/lineitems/{link.lineitem_id}")

    def render_launch_form(self, launch_data: dict, **kwargs) -> HTMLResponse:
        fields = "".join(f'<input type="hidden" name="{name}" '
                         f'value="{html.escape(launch_data[name])}">'
                         for name in ("id_token", "state"))
        return HTMLResponse('<form method="post" '
                            f'action="{html.escape(launch_data["launch_url"])}">{fields}</form>'
                            # as lti1p3platform's own template
                            '<script>document.forms[0].submit()</script>')


class Gradebook(AssignmentsGradesService):
    def __init__(self, request: DictRequest, platform: "Platform", lineitem_id: str | None = None):
        super().__init__(request, platform.config, f"{platform.url}/lineitems",
                         f"{platform.url}/lineitems/{lineitem_id}" if lineitem_id else None)
        self.platform = platform

    def find_lineitems(self, page=1, limit=None, line_item_id=None, resource_link_id=None,
                       resource_id=None, tag=None, **_):
        items = [item for item in self.platform.lineitems.values()
                 if (not resource_id or item.get("resourceId") == resource_id)
                 and (not tag or item.get("tag") == tag)]
        return {"content": items, "has_next": False, "next": None}

    def find_lineitem(self, line_item_id):
        if line_item_id not in self.platform.lineitems:
            raise LineItemNotFoundException()
        return self.platform.lineitems[line_item_id]

    def create_lineitem(self, creation_data):
        return self.platform.new_lineitem(creation_data)

    def update_lineitem(self, update_data):
        self.find_lineitem(update_data["id"]).update(update_data)
        return self.platform.lineitems[update_data["id"]]

    def delete_lineitem(self, line_item_id):
        self.platform.lineitems.pop(self.find_lineitem(line_item_id)["id"].rsplit("/", 1)[-1])

    def update_score(self, line_item_id, score):
        self.find_lineitem(line_item_id)
        self.platform.scores.setdefault(line_item_id, {})[score["userId"]] = score
        self.platform.received_at[(line_item_id, score["userId"])] = time.time()
        return UpdateScoreStatus.SUCCESS

    def get_results(self, line_item_id, page=1, limit=None, user_id=None, **_):
        scores = self.platform.scores.get(self.find_lineitem(line_item_id) and line_item_id, {})
        return {"content": [{"userId": user, "resultScore": s["scoreGiven"],
                             "resultMaximum": s["scoreMaximum"],
                             "comment": s.get("comment")} for user, s in scores.items()],
                "has_next": False}


class Members(NamesRoleProvisioningService):
    def __init__(self, request: DictRequest, platform: "Platform"):
        super().__init__(request, platform.config, f"{platform.url}/memberships")
        self.platform = platform

    def get_member_data_page(self, page=1, limit=None, role=None, since=None, **_):
        members = [{"user_id": u.user_id, "name": u.name, "roles": u.roles, "status": "Active",
                    **({"email": u.email} if u.email else {}),
                    **({"lis_person_sourcedid": u.sourcedid} if u.sourcedid else {})}
                   for u in self.platform.users.values()]
        return {"content": members, "has_next": False}

    def get_context_by_id(self):
        return COURSE


class Platform:
    """The LMS: its registration of the tool, its users, links, gradebook; served on loopback."""

    def __init__(self, tool_url: str, issuer: str = "https://lms.example.edu",
                 client_id: str = "bpe-labs-client", deployment_id: str = "deployment-1"):
        self.port = free_port()
        # another site than the tool's 127.0.0.1, as an LMS is
        self.url = f"http://localhost:{self.port}"
        self.private_key, self.public_key = key_pair()
        self.registration = (
            Registration()
            .set_iss(issuer)
            .set_client_id(client_id)
            .set_deployment_id(deployment_id)
            .set_oidc_login_url(f"{tool_url}/lti/login")
            .set_launch_url(f"{tool_url}/lti/launch")
            .set_deeplink_launch_url(f"{tool_url}/lti/launch")
            .set_tool_key_set_url(f"{tool_url}/lti/jwks")
            .set_platform_public_key(self.public_key)
            .set_platform_private_key(self.private_key)
        )
        self.config = Config(registration=self.registration)
        self.config.get_registration()
        self.id_token_seconds = 300
        self.users: dict[str, User] = {}
        self.links: dict[str, Link] = {}
        self.lineitems: dict[str, dict] = {}
        # line item id -> LTI user id -> the score as posted
        self.scores: dict[str, dict[str, dict]] = {}
        self.deep_linked: list[dict] = []  # content items the tool sent back
        # (line item, user) -> when the last score came
        self.received_at: dict[tuple[str, str], float] = {}
        self.scores_down = False  # the gradebook answers 503 (an LMS that is away)
        self.server = uvicorn.Server(uvicorn.Config(self._app(), host="127.0.0.1", port=self.port,
                                                    log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, name="lti-platform", daemon=True)

    # the course
    def add_user(
        self, user_id: str, name: str, email: str | None, roles: list[str],
        sourcedid: str | None = None,
    ) -> None:
        self.users[user_id] = User(user_id, name, email, roles, sourcedid)

    def new_lineitem(self, data: dict) -> dict:
        number = uuid.uuid4().hex[:8]
        self.lineitems[number] = {**data, "id": f"{self.url}/lineitems/{number}"}
        return self.lineitems[number]

    def add_link(self, custom: dict, score_maximum: float | None = None) -> Link:
        """An assignment made by hand (as in Moodle: a custom
        parameter lab=...), with a gradebook column."""
        lineitem = (
            self.new_lineitem({"label": "by hand", "scoreMaximum": score_maximum})
            if score_maximum
            else None
        )
        link = Link(f"link-{uuid.uuid4().hex[:8]}", dict(custom),
                    lineitem["id"].rsplit("/", 1)[-1] if lineitem else None)
        self.links[link.link_id] = link
        return link

    # addresses a browser opens
    def launch_url(self, link: Link, user: str, target: str = "window") -> str:
        return f"{self.url}/start?user={user}&link={link.link_id}&target={target}"

    def deep_link_url(self, user: str) -> str:
        return f"{self.url}/start?user={user}&deep=1"

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the LTI platform did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    def _app(self) -> FastAPI:
        app = FastAPI()

        async def service_request(request: Request) -> DictRequest:
            body = await request.body()
            return DictRequest({"method": request.method, "form_data": {},
                                "get_data": dict(request.query_params), "headers": request.headers,
                                "content_type": request.headers.get("content-type"),
                                "path": request.url.path,
                                "json": json.loads(body) if body else None})

        def answer(response) -> JSONResponse:
            return JSONResponse(response.result if response.result is not None
                                else {"message": response.message},
                                status_code=response.code, media_type=response.media_type)

        @app.get("/start")
        def start(user: str, link: str = "", deep: str = "", target: str = "window"):
            login = PlatformLogin(None, self.config)
            login.set_lti_message_hint(user=user, link=link, deep=bool(deep), target=target)
            if deep:
                login.set_deeplinking_launch_url()
            return login.initiate_login(user)

        @app.get("/authorize")
        def authorize(request: Request):
            return PlatformLaunch(dict(request.query_params), self).lti_launch()

        @app.get("/jwks")
        def jwks():
            return self.config.get_jwks()

        @app.post("/token")
        async def token(request: Request):
            form = dict(await request.form())
            try:
                return await run_in_threadpool(self.config.get_access_token, form)
            except Exception as error:
                return JSONResponse({"error": "invalid_client", "detail": str(error)},
                                    status_code=400)

        @app.api_route("/lineitems", methods=["GET", "POST"])
        async def lineitems(request: Request):
            service = Gradebook(await service_request(request), self)
            handle = (
                service.handle_get_lineitems
                if request.method == "GET"
                else service.handle_create_lineitem
            )
            return answer(service.handle_resp(handle))

        @app.get("/lineitems/{number}")
        async def lineitem(number: str, request: Request):
            service = Gradebook(await service_request(request), self, number)
            return answer(service.handle_resp(service.handle_get_lineitem, line_item_id=number))

        @app.post("/lineitems/{number}/scores")
        async def scores(number: str, request: Request):
            if self.scores_down:
                return JSONResponse({"error": "the gradebook is down for maintenance"},
                                    status_code=503)
            service = Gradebook(await service_request(request), self, number)
            return answer(service.handle_resp(service.handle_update_score, line_item_id=number))

        @app.get("/memberships")
        async def memberships(request: Request):
            service = Members(await service_request(request), self)
            return answer(service.handle_resp(service.handle_get_members))

        @app.post("/deep-link-return")
        async def deep_link_return(request: Request):
            form = dict(await request.form())
            try:  # the tool's signature, checked against its JWKS by lti1p3platform
                items = await run_in_threadpool(self.config.validate_deeplinking_resp,
                                                {"JWT": form.get("JWT", "")})
            except Exception as error:
                return HTMLResponse(f"<p>refused: {html.escape(type(error).__name__)}: "
                                    f"{html.escape(str(error))}</p>", status_code=400)
            made = []
            for item in items:
                lineitem = self.new_lineitem(item["lineItem"]) if item.get("lineItem") else None
                link = Link(f"link-{uuid.uuid4().hex[:8]}", item.get("custom") or {},
                            lineitem["id"].rsplit("/", 1)[-1] if lineitem else None)
                self.links[link.link_id] = link
                self.deep_linked.append({**item, "link_id": link.link_id})
                made.append(link.link_id)
            return HTMLResponse(f"<p>added: {', '.join(made)}</p>")

        return app

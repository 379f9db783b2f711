"""pylti1p3 on Starlette (FastAPI). pylti1p3 ships adapters for Django and Flask only; this is the
small one the service needs: a request (its parameters from the query or the form, its cookies), a
cookie service (cookies set on the response afterwards), a redirect, and the login, launch and
service-connector classes bound to them.

The OIDC state cookie crosses sites (the launch is a form the LMS posts): ``SameSite=None; Secure``,
and ``Partitioned`` so that it also works when the LMS shows the tool in a frame.
"""
from __future__ import annotations

import threading
import time
import typing as t

from pylti1p3.cookie import CookieService
from pylti1p3.exception import LtiInvalidNonceException, LtiMessageValidationException
from pylti1p3.message_launch import MessageLaunch
from pylti1p3.oidc_login import OIDCLogin
from pylti1p3.redirect import Redirect
from pylti1p3.request import Request
from pylti1p3.service_connector import ServiceConnector
from starlette.responses import RedirectResponse, Response

from autograder.service.lti.nonces import nonce_key, nonce_ok, signed_nonce


class StarletteRequest(Request):
    """A Starlette request as pylti1p3 reads it; ``form``: the body's fields, read beforehand
    (async)."""

    def __init__(self, request, form: t.Mapping[str, t.Any] | None = None):
        self.request = request
        self.params = {**request.query_params, **(form or {})}

    @property
    def session(self) -> dict:
        return {}  # unused: the sign-in's state is in the database (storage.py)

    # pylti1p3 annotates the result as str, but its own Django and Flask requests return None for
    # a missing parameter, and MessageLaunch tests for it ("if not id_token")
    def get_param(self, key: str) -> str | None:  # type: ignore[override]
        value = self.params.get(key)
        return value if isinstance(value, str) else None

    def get_cookie(self, key: str) -> str | None:
        return self.request.cookies.get(key)

    def is_secure(self) -> bool:
        return self.request.url.scheme == "https"


class Cookies(CookieService):
    """Cookies pylti1p3 asks for, set on the response by :meth:`apply`."""

    def __init__(self, request: StarletteRequest):
        self.request = request
        self.pending: dict[str, tuple[str, int | None]] = {}

    def _name(self, name: str) -> str:
        return f"{self._cookie_prefix}-{name}"

    def get_cookie(self, name: str) -> str | None:
        return self.request.get_cookie(self._name(name))

    def set_cookie(self, name: str, value, exp: int | None = 3600) -> None:
        self.pending[self._name(name)] = (str(value), exp)

    def apply(self, response: Response) -> Response:
        for name, (value, max_age) in self.pending.items():
            response.set_cookie(
                name, value, max_age=max_age, path="/", secure=True, httponly=True, samesite="none"
            )
            # Partitioned by hand: Starlette's own flag needs Python 3.14's http.cookies.
            header, cookie = response.raw_headers[-1]
            response.raw_headers[-1] = (header, cookie + b"; Partitioned")
        return response


class StarletteRedirect(Redirect):
    def __init__(self, location: str, cookies: Cookies):
        self.location, self.cookies = location, cookies

    def do_redirect(self) -> Response:
        return self.cookies.apply(RedirectResponse(self.location, status_code=302))

    do_js_redirect = do_redirect  # the pages run no script: a plain redirect either way

    def set_redirect_url(self, location: str) -> None:
        self.location = location

    def get_redirect_url(self) -> str:
        return self.location


class Login(OIDCLogin):
    def get_redirect(self, url: str) -> StarletteRedirect:
        return StarletteRedirect(url, self._cookie_service)

    def _generate_nonce(self) -> str:
        # signed, not stored (nonces.py): a login initiation writes nothing
        assert self._registration is not None  # found before the nonce is made
        return signed_nonce(nonce_key(self._registration.get_tool_private_key()))


class Launch(MessageLaunch):
    # str | None as get_param (pylti1p3's annotation says str; its callers test for a missing one)
    def _get_request_param(self, key: str) -> str | None:  # type: ignore[override]
        return self._request.get_param(key)

    def validate(self) -> Launch:
        """pylti1p3's checks, the signature before the nonce: only a launch the platform signed
        spends (writes) a nonce."""
        if self._restored:
            raise LtiMessageValidationException("A restored launch can't be validated.")
        self._validated = True
        try:
            (
                self.validate_state()
                .validate_jwt_format()
                .validate_registration()
                .validate_jwt_signature()
                .validate_nonce()
                .validate_deployment()
                .validate_message()
                .save_launch_data()
            )
            return self
        except Exception:
            self._validated = False
            raise

    def validate_nonce(self) -> Launch:
        nonce = self._get_jwt_body().get("nonce")
        assert self._registration is not None  # validate_registration ran
        if not nonce_ok(nonce_key(self._registration.get_tool_private_key()), str(nonce)):
            raise LtiInvalidNonceException("Invalid Nonce.")
        super().validate_nonce()  # spent once (storage.OnceSessions.check_nonce)
        return self


class Connector(ServiceConnector):
    """pylti1p3's service connector with the platforms' access tokens kept by this process until a
    minute before they expire (pylti1p3next leaves the cache to its framework adapters)."""

    _tokens: dict[str, tuple[str, float]] = {}
    _lock = threading.Lock()

    def _scope_key(self, scopes: t.Iterable[str]) -> str:
        # two clients of one LMS: two tokens
        return f"{super()._scope_key(scopes)}|{self._registration.get_client_id()}"

    def _get_cached_access_token(self, scope_key: str) -> str | None:
        with self._lock:
            token, until = self._tokens.get(scope_key, (None, 0.0))
            return token if time.monotonic() < until else None

    def _cache_access_token(self, scope_key: str, access_token: str, expires_in: float) -> None:
        with self._lock:
            self._tokens[scope_key] = (access_token, time.monotonic() + float(expires_in or 0) - 60)

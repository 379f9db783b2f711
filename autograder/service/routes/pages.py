"""What the pages share: the signed-in principal, rendering a template, the feedback document."""
from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse

from autograder.course import current
from autograder.service.app import FEEDBACK_POLICY
from autograder.service.auth import CSRF_COOKIE, Principal, anonymous_csrf, identify, set_cookie


def signed_in(request: Request) -> Principal | None:
    return identify(request, request.app.state.db, request.app.state.web_auth)


def render(
    request: Request,
    template: str,
    status: int = 200,
    principal: Principal | None = None,
    **context,
) -> HTMLResponse:
    page = request.app.state.templates.get_template(template).render(
        course=current().name, principal=principal, **context
    )
    return HTMLResponse(page, status_code=status)


def signin_form(request: Request, template: str, status: int = 200, **context) -> HTMLResponse:
    """A sign-in page, with its double-submit CSRF token in the form and in a cookie."""
    csrf = anonymous_csrf(request)
    response = render(request, template, status, csrf=csrf, **context)
    set_cookie(response, CSRF_COOKIE, csrf, max_age=3600, same_site="strict")
    return response


def see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def feedback_page(html: str) -> HTMLResponse:
    """The feedback page the command line writes, shown as a sandboxed document of its own."""
    return HTMLResponse(html, headers={"Content-Security-Policy": FEEDBACK_POLICY})

"""What the pages share: rendering a template, a sign-in form, the feedback document."""
from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from autograder.course import current
from autograder.service.auth import CSRF_COOKIE, Principal, anonymous_csrf, set_cookie
from autograder.service.dependencies import templates
from autograder.service.holds import HELD_PER_ADDRESS, Holds

# Pages run no script at all; the feedback page is shown sandboxed, as a document of its own origin.
PAGE_POLICY = (
    "default-src 'self'; script-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' "
    "data:; frame-src 'self'; frame-ancestors 'self'; form-action 'self'; base-uri 'none'; "
    "object-src 'none'"
)
FEEDBACK_POLICY = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'; sandbox"
FORGED = ("this form did not come from this site's own page (or it is too old): reload the page "
          "and try again")


def render(
    request: Request,
    template: str,
    status: int = 200,
    principal: Principal | None = None,
    **context,
) -> HTMLResponse:
    page = templates(request).get_template(template).render(
        course=current().name, principal=principal, **context
    )
    return HTMLResponse(page, status_code=status)


def signin_form(request: Request, template: str, status: int = 200, **context) -> HTMLResponse:
    """A sign-in page, with its double-submit CSRF token in the form and in a cookie."""
    csrf = anonymous_csrf(request)
    response = render(request, template, status, csrf=csrf, **context)
    set_cookie(response, CSRF_COOKIE, csrf, max_age=3600, same_site="strict")
    return response


def address(request: Request) -> str | None:
    """The caller's address (the client's, as a proxy of --forwarded-allow-ips says it)."""
    return request.client.host if request.client else None


def too_many(request: Request, template: str, wait: int) -> HTMLResponse:
    """A sign-in form refused for too many failed attempts (signin_limits.py)."""
    response = signin_form(
        request,
        template,
        429,
        message=f"Too many failed sign-ins from here or for this account: try again in {wait} s.",
    )
    response.headers["Retry-After"] = str(wait)
    return response


async def held(holds: Holds, where: str | None, response: Response, retry_after: float) -> Response:
    """A sign-in form's refusal, after its hold (holds.py); when the address or the process holds
    all it may, at once, closing its connection."""
    if not await holds.hold(f"address:{where}", retry_after, HELD_PER_ADDRESS):
        response.headers["Connection"] = "close"
    return response


def see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def feedback_page(html: str) -> HTMLResponse:
    """The feedback page the command line writes, shown as a sandboxed document of its own."""
    return HTMLResponse(html, headers={"Content-Security-Policy": FEEDBACK_POLICY})

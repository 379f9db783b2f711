"""Why a launch from the LMS was refused, said for the person who sees the page (a student, most of
the time), from what pylti1p3 raised.

    >>> from pylti1p3.exception import LtiInvalidNonceException, LtiMessageValidationException
    >>> refusal(LtiInvalidNonceException("Invalid Nonce."))[0]  # doctest: +NORMALIZE_WHITESPACE
    'This link from the LMS was already used, or it is too old (a sign-in is good once, for 5
    minutes).'
    >>> refusal(LtiMessageValidationException(
    ...     "Can't decode id_token: Signature verification failed"))[0]
    "The LMS's signed message did not verify: its signature is wrong."
    >>> refusal(LtiMessageValidationException("Can't decode id_token: Signature has expired"))[0]
    "The LMS's signed message has expired."
"""
from __future__ import annotations

from pylti1p3.exception import (
    LtiException,
    LtiInvalidNonceException,
    LtiKeyException,
    OIDCException,
    ToolConfException,
)

AGAIN = "Go back to the LMS and open the assignment again."
ASK = "Please tell your instructor: nothing was recorded."


class Refused(Exception):
    """A launch the service refuses: what happened and what to do (shown on the page), the HTTP
    status."""

    def __init__(self, what: str, todo: str = AGAIN, status: int = 403):
        super().__init__(what)
        self.what, self.todo, self.status = what, todo, status


def refusal(error: Exception) -> tuple[str, str]:
    """(what happened, what to do) for an exception raised while verifying a login or a launch."""
    text = str(error)
    if isinstance(error, LtiInvalidNonceException):
        return (
            "This link from the LMS was already used, or it is too old (a sign-in is good once, "
            "for 5 minutes).",
            AGAIN,
        )
    if (
        isinstance(error, ToolConfException)
        or "Registration not found" in text
        or "Could not find registration" in text
        or "Client id not registered" in text
    ):
        return (
            "This LMS (its issuer and client id) is not registered with this grading service.",
            "The service's administrator adds it to the LTI configuration (docs/LTI.md). " + ASK,
        )
    if "deployment ID" in text:
        return (
            "This LMS deployment is not registered with this grading service.",
            "The service's administrator adds the deployment id to the LTI configuration "
            "(docs/LTI.md). "
            + ASK,
        )
    if "Signature has expired" in text:
        return "The LMS's signed message has expired.", AGAIN
    if (
        isinstance(error, LtiKeyException)
        or "decode id_token" in text
        or "Invalid JWT" in text
        or "3 parts" in text
    ):
        return "The LMS's signed message did not verify: its signature is wrong.", ASK
    if "State not found" in text or "Missing state" in text:
        return ("This sign-in did not start in this browser, or took more than 5 minutes.",
                AGAIN + " If your browser blocks cookies of other sites, allow them for this one.")
    if isinstance(error, (OIDCException, LtiException)):
        return f"The LMS's request could not be verified ({text[:200]}).", ASK
    return f"The LMS's request could not be read ({type(error).__name__}).", ASK

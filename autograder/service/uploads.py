"""The upload cap, enforced while the body streams in: a request that says it is larger is answered
413 before one byte of its body is read, and one that turns out larger (chunked, or lying) is cut
off at the cap, never read whole. The parsed file is then written to a private temporary file."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

# Room for the multipart envelope around the file (boundaries, headers, a CSRF field).
ENVELOPE = 64 * 1024


class TooLarge(Exception):
    """The request body went past the cap."""


def too_large_message(limit: int) -> str:
    return (
        f"this file is larger than the service takes ({limit / 1024 / 1024:g} MB): clear the "
        "notebook's outputs (Edit → Clear all outputs), save it and submit again"
    )


class UploadCap:
    """ASGI middleware: bodies of at most ``limit`` bytes (plus the multipart envelope)."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.limit + ENVELOPE
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            body = json.dumps(
                {"detail": too_large_message(self.limit), "status": "file_too_large"}
            ).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 413,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"connection", b"close"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        received = 0

        async def limited():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise TooLarge()
            return message

        await self.app(scope, limited, send)


async def save_upload(upload, limit: int) -> Path:
    """The uploaded file (Starlette's ``UploadFile``) in a new private temporary file; raises
    :class:`TooLarge` past ``limit`` bytes. The caller removes the file."""
    handle, name = tempfile.mkstemp(prefix="autograder-upload-", suffix=".ipynb")
    written = 0
    try:
        with os.fdopen(handle, "wb") as out:
            while block := await upload.read(1 << 20):
                written += len(block)
                if written > limit:
                    raise TooLarge()
                out.write(block)
    except BaseException:
        os.unlink(name)
        raise
    return Path(name)

"""Stored results that a resumed run may trust, and only those.

A result file in ``OUT/results/`` is a result's JSON data (``GradeResult.to_json``) with a
``checksum``. It is reused only when (1) the ``checksum`` is the HMAC-SHA256 of the rest under a key
kept outside OUT (by default ``~/.config/autograder/resume.key``, made on first use, mode 0600;
``$AUTOGRADER_RESUME_KEY`` names another file), (2) the rest is a well-formed result (one an older
version wrote, with fields since added or removed, is graded again), (3) the submission's bytes
still hash to its ``sha256``, and (4) the course files hash to its ``sources`` (see course.py).
Anyone who can write OUT but not the key cannot make a result the grader trusts.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

from autograder.grading.result import GradeResult, MalformedResult

KEY_ENV = "AUTOGRADER_RESUME_KEY"
CHECKSUM = "checksum"  # the one key of a result file that is not the result's own


def key_path() -> Path:
    return Path(os.environ.get(KEY_ENV) or Path.home() / ".config" / "autograder" / "resume.key")


def load_key(path: Path | None = None) -> bytes:
    """The resume key, created (32 random bytes, owner-only) if it does not exist yet."""
    path = Path(path or key_path())
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Written in full beside it, then linked into place: a grader starting at the same moment
        # finds either no key or the whole key, never an empty file to sign with.
        written = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        with os.fdopen(
            os.open(written, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb"
        ) as handle:
            handle.write(secrets.token_hex(32).encode())
        try:
            os.link(written, path)
        except FileExistsError:  # another grader made it first: theirs is the key
            pass
        finally:
            os.unlink(written)
    return path.read_bytes()


def _body(data: dict) -> bytes:
    return json.dumps(
        {k: v for k, v in data.items() if k != CHECKSUM}, sort_keys=True, ensure_ascii=True
    ).encode()


def sign(data: dict, key: bytes) -> dict:
    """``data`` with its ``checksum``."""
    data[CHECKSUM] = hmac.new(key, _body(data), hashlib.sha256).hexdigest()
    return data


def signed(result: GradeResult, key: bytes) -> dict:
    """The JSON data of a result file: the result's own, and its ``checksum``."""
    return sign(result.to_json(), key)


def unsigned(data: dict) -> GradeResult:
    """The result a result file's data holds, checksum not checked (to read a finished run's
    results, never to resume one); raises ``MalformedResult``."""
    if not isinstance(data, dict):
        raise MalformedResult(f"result: expected an object, got {type(data).__name__}")
    return GradeResult.from_json({k: v for k, v in data.items() if k != CHECKSUM})


def authentic(saved: object, key: bytes) -> GradeResult | None:
    """The result ``saved`` (a parsed result file) holds, if this grader signed it (under ``key``)
    and it is well formed; else None. What a later batch reports of an earlier one (ledger.py)."""
    if not isinstance(saved, dict) or not isinstance(saved.get(CHECKSUM), str):
        return None
    try:
        expected = hmac.new(key, _body(saved), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, saved[CHECKSUM]):  # TypeError for a non-ASCII checksum
            return None
    except (TypeError, ValueError):
        return None
    try:
        return unsigned(saved)
    except MalformedResult:
        return None


def trusted(saved: object, key: bytes, sha256: str, sources: str) -> GradeResult | None:
    """The result a resumed run may take ``saved`` (a parsed result file) as, if any, for the file
    whose bytes hash to ``sha256`` graded with the course files whose digest is ``sources``."""
    result = authentic(saved, key)
    if result is None or result.sha256 != sha256 or result.sources != sources:
        return None
    return result

"""Stored results that a resumed run may trust, and only those.

A result in ``OUT/results/`` is reused only when (1) the submission's bytes still hash to the
result's ``sha256``, (2) the course files hash to its ``sources`` (see course.py), and (3) its
``checksum`` is the HMAC-SHA256 of the rest of the result under a key kept outside OUT (by default
``~/.config/autograder/resume.key``, made on first use, mode 0600; ``$AUTOGRADER_RESUME_KEY`` names
another file). Anyone who can write OUT but not the key cannot make a result the grader trusts.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

KEY_ENV = "AUTOGRADER_RESUME_KEY"


def key_path() -> Path:
    return Path(os.environ.get(KEY_ENV) or Path.home() / ".config" / "autograder" / "resume.key")


def load_key(path: Path | None = None) -> bytes:
    """The resume key, created (32 random bytes, owner-only) if it does not exist yet."""
    path = Path(path or key_path())
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another grader made it first
            return path.read_bytes()
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(secrets.token_hex(32).encode())
    return path.read_bytes()


def _body(result: dict) -> bytes:
    return json.dumps({k: v for k, v in result.items() if k != "checksum"}, sort_keys=True, ensure_ascii=True).encode()


def sign(result: dict, key: bytes) -> dict:
    """The result with its ``checksum``."""
    result["checksum"] = hmac.new(key, _body(result), hashlib.sha256).hexdigest()
    return result


def trusted(saved: object, key: bytes, sha256: str, sources: str) -> bool:
    """May a resumed run take ``saved`` (a parsed result file) as this file's result?"""
    if not isinstance(saved, dict) or not isinstance(saved.get("checksum"), str):
        return False
    if saved.get("sha256") != sha256 or saved.get("sources") != sources:
        return False
    try:
        expected = hmac.new(key, _body(saved), hashlib.sha256).hexdigest()
    except (TypeError, ValueError):
        return False
    return hmac.compare_digest(expected, saved["checksum"])

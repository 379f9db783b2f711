"""The OIDC nonce of an LTI login, signed instead of stored: a login initiation (which anyone may
send, signed in or not) writes nothing, and the launch that comes back checks the signature and
its expiry, then spends the nonce once (storage.py keeps the spent ones until they expire).

The key is derived from the tool's private key, so that every web process of the service, and a
restarted one, checks what another signed.

    >>> key = nonce_key("-----BEGIN PRIVATE KEY----- ...")
    >>> nonce = signed_nonce(key)
    >>> nonce_ok(key, nonce), nonce_ok(key, nonce[:-2] + "xx"), nonce_ok(b"another", nonce)
    (True, False, False)
    >>> nonce_ok(key, signed_nonce(key, seconds=-1))
    False
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import time

NONCE_SECONDS = 300  # from the OIDC login to the launch: the state cookie's five minutes too


def nonce_key(private_key: str | None) -> bytes:
    return hashlib.sha256(b"bpe-labs lti nonce\0" + (private_key or "").encode()).digest()


def _mac(key: bytes, body: str) -> str:
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()[:32]


def signed_nonce(key: bytes, seconds: int = NONCE_SECONDS) -> str:
    body = f"{secrets.token_urlsafe(16)}.{int(time.time()) + seconds}"
    return f"{body}.{_mac(key, body)}"


def nonce_ok(key: bytes, nonce: str) -> bool:
    """Signed with ``key`` and not expired."""
    body, _, mac = str(nonce).rpartition(".")
    expires = body.rpartition(".")[2]
    return (
        len(nonce) < 200
        and expires.isascii()
        and expires.isdigit()
        and hmac.compare_digest(_mac(key, body), mac)
        and int(expires) >= time.time()
    )

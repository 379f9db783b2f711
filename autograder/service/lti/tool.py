"""The platforms the service is registered with, and the tool's own key pair.

The registrations are pylti1p3's JSON file, one entry per LMS (issuer) and client id::

    {"https://canvas.instructure.com": [{
        "client_id": "10000000000042",
        "auth_login_url": "https://sso.canvaslms.com/api/lti/authorize_redirect",
        "auth_token_url": "https://sso.canvaslms.com/login/oauth2/token",
        "key_set_url": "https://sso.canvaslms.com/api/lti/security/jwks",
        "private_key_file": "lti-private.pem", "public_key_file": "lti-public.pem",
        "deployment_ids": ["123:8865aa05b4b79b64a91a86042e43af5ea8ae79eb"]}]}

Key files are read relative to the JSON file. ``bpe-labs lti-keys DIR`` writes the key pair.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from pylti1p3.exception import ToolConfException
from pylti1p3.registration import Registration
from pylti1p3.tool_config import ToolConfJsonFile

PRIVATE_KEY = "lti-private.pem"
PUBLIC_KEY = "lti-public.pem"


class ConfigError(ValueError):
    """The LTI configuration cannot be used: says what to fix."""


def load(path: Path) -> ToolConfJsonFile:
    """The registrations in ``path``, each checked: its fields, its key pair, its deployments."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(
            f"the LTI configuration {path} could not be read ({error.strerror or error})"
        ) from None
    except (ValueError, UnicodeDecodeError) as error:
        raise ConfigError(f"the LTI configuration {path} is not JSON ({error})") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(
            f"the LTI configuration {path} must map each platform's issuer to its registration "
            "(docs/LTI.md)"
        )
    try:
        config = ToolConfJsonFile(str(path.resolve()))
    except (ToolConfException, OSError) as error:
        raise ConfigError(f"the LTI configuration {path}: {error}") from None
    for issuer, entries in data.items():
        for entry in entries if isinstance(entries, list) else [entries]:
            client = entry.get("client_id")
            if not entry.get("key_set_url") and not entry.get("key_set"):
                raise ConfigError(
                    f"the LTI configuration {path}: {issuer} (client {client}) needs the "
                    "platform's key_set_url (its JWKS address)"
                )
            if not entry.get("deployment_ids"):
                raise ConfigError(
                    f"the LTI configuration {path}: {issuer} (client {client}) lists no "
                    "deployment_ids"
                )
            registration = find_registration(config, issuer, client)
            if not registration.get_tool_public_key():
                raise ConfigError(
                    f"the LTI configuration {path}: {issuer} (client {client}) needs "
                    "public_key_file (the tool's public key, published at /lti/jwks)"
                )
            try:
                registration.get_kid()
            except Exception as error:
                raise ConfigError(
                    f"the LTI configuration {path}: {issuer} (client {client}): the key files are "
                    f"not an RSA key pair in PEM ({error})"
                ) from None
    return config


def find_registration(config: ToolConfJsonFile, issuer: str, client_id: str | None) -> Registration:
    """The registration of ``issuer`` and ``client_id`` (the issuer's only one if it has one)."""
    if config.check_iss_has_one_client(issuer):
        return config.find_registration(issuer)
    # pylti1p3 annotates client_id as str, but get_iss_config, which it is passed to, takes None
    # (an issuer with several clients and no client named: ToolConfException, as it should)
    return config.find_registration_by_params(issuer, client_id)  # type: ignore[arg-type]


def issuers(config: ToolConfJsonFile) -> list[str]:
    return sorted(config._config or {})  # pylti1p3 keeps the JSON as it read it


def write_keys(folder: Path) -> tuple[Path, Path]:
    """A new 2048-bit RSA key pair in ``folder`` (the private key owner-only); never overwrites."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    folder = Path(folder)
    private, public = folder / PRIVATE_KEY, folder / PUBLIC_KEY
    for path in (private, public):
        if path.exists():
            raise ConfigError(
                f"{path} exists: it is not overwritten (a platform may know its key); name another "
                "folder"
            )
    folder.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    descriptor = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public

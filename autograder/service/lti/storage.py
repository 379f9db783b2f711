"""What an LTI sign-in keeps between its steps, in the service's database (table ``lti_state``), so
that any web process of the service can take the next step and a restart loses nothing.

pylti1p3 keeps the launches (read again when an instructor picks a lab or builds the roster) and
which state matched which id_token. The nonce of an OIDC login is signed, not stored (nonces.py):
a login initiation writes nothing. A signed launch *spends* its nonce: one INSERT, which only one
request can win; the spent nonce is kept until it would have expired, so a launch posted twice
passes once.
"""
from __future__ import annotations

import json
import typing as t
from datetime import timedelta

from pylti1p3.launch_data_storage.base import LaunchDataStorage
from pylti1p3.session import SessionService
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from autograder.service.database import Database, rowcount
from autograder.service.lti.nonces import NONCE_SECONDS
from autograder.service.models import LtiState
from autograder.service.settings import now

LAUNCH_SECONDS = 3600  # how long an instructor's launch page stays usable
KEY_LENGTH = 200


class DatabaseStorage(LaunchDataStorage):
    """pylti1p3's launch data storage on the ``lti_state`` table (no per-browser session id: every
    key holds a random nonce, state or launch id)."""

    def __init__(self, db: Database):
        super().__init__()
        self.db = db

    def get_session_cookie_name(self) -> None:
        return None

    def can_set_keys_expiration(self) -> bool:
        return True

    def _key(self, key: str) -> str:
        key = self._prepare_key(key)
        if len(key) > KEY_LENGTH:
            raise ValueError("an LTI state key longer than 200 characters")
        return key

    def get_value(self, key: str) -> t.Any:
        with self.db.reading() as session:
            row = session.scalars(
                select(LtiState).where(LtiState.key == self._key(key), LtiState.expires_at > now())
            ).first()
            return json.loads(row.value) if row is not None else None

    def set_value(self, key: str, value: t.Any, exp: int | None = None) -> None:
        key = self._key(key)
        with self.db.writing() as session:
            session.execute(
                delete(LtiState).where((LtiState.key == key) | (LtiState.expires_at <= now()))
            )
            session.add(LtiState(key=key, value=json.dumps(value),
                                 expires_at=now() + timedelta(seconds=exp or LAUNCH_SECONDS)))

    def check_value(self, key: str) -> bool:
        with self.db.reading() as session:
            return (
                session.scalar(
                    select(LtiState.key).where(
                        LtiState.key == self._key(key), LtiState.expires_at > now()
                    )
                )
                is not None
            )

    def put_once(self, key: str, exp: int) -> bool:
        """Keep ``key`` for ``exp`` seconds; False if it is already kept (one INSERT, which only
        one request can win)."""
        key = self._key(key)
        try:
            with self.db.writing() as session:
                session.execute(delete(LtiState).where(LtiState.expires_at <= now()))
                session.add(LtiState(key=key, value="true",
                                     expires_at=now() + timedelta(seconds=exp)))
            return True
        except IntegrityError:
            return False

    def take(self, key: str) -> bool:
        """Remove the key; True for the one caller that removed it before it expired."""
        key = self._key(key)
        with self.db.writing() as session:
            won = rowcount(session.execute(
                delete(LtiState).where(LtiState.key == key, LtiState.expires_at > now())
            ))
            # expired: gone all the same
            session.execute(delete(LtiState).where(LtiState.key == key))
            return bool(won)


class OnceSessions(SessionService):
    """pylti1p3's session service on :class:`DatabaseStorage`: a nonce lives five minutes and is
    good once."""

    data_storage: DatabaseStorage

    def __init__(self, storage: DatabaseStorage):
        self.data_storage = storage
        self._launch_data_lifetime = LAUNCH_SECONDS

    # pylti1p3 hands the storage over again: keep this one
    def set_data_storage(self, data_storage) -> None:
        pass

    def save_nonce(self, nonce: str) -> None:
        pass  # signed, not stored (nonces.py): a login initiation writes nothing

    def check_nonce(self, nonce: str) -> bool:
        """Spend the (signed, unexpired) nonce of a signed launch: True the first time only."""
        return self.data_storage.put_once(self._get_key("nonce", nonce), exp=NONCE_SECONDS)

"""Secrets at rest: Fernet encryption for kubeconfigs, SHA-256 digests for API tokens.

FIELD_ENCRYPTION_KEY holds one or more comma-separated Fernet keys. The first encrypts; all of
them decrypt, so a key is rotated by putting the new key first, running
`manage.py rotate_encryption_key` (re-encrypts every row with the first key), then dropping
the old key. Without FIELD_ENCRYPTION_KEY (development only) a key is derived from SECRET_KEY.
"""

from __future__ import annotations

import base64
import hashlib
import secrets

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models


def _keys() -> list[bytes]:
    raw = [k.strip() for k in (settings.FIELD_ENCRYPTION_KEY or "").split(",") if k.strip()]
    if not raw:
        digest = hashlib.sha256(("field-encryption:" + settings.SECRET_KEY).encode()).digest()
        return [base64.urlsafe_b64encode(digest)]
    keys = []
    for key in raw:
        try:
            Fernet(key.encode())
        except (ValueError, TypeError) as exc:
            raise ImproperlyConfigured(
                "FIELD_ENCRYPTION_KEY must be comma-separated Fernet keys "
                "(python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')"
            ) from exc
        keys.append(key.encode())
    return keys


def fernet() -> MultiFernet:
    return MultiFernet([Fernet(k) for k in _keys()])


def encrypt(plaintext: str) -> str:
    return fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise ImproperlyConfigured(
            "cannot decrypt a stored secret: FIELD_ENCRYPTION_KEY does not hold the key it was "
            "encrypted with"
        ) from exc


def rotate(token: str) -> str:
    return fernet().rotate(token.encode()).decode()


class EncryptedTextField(models.TextField):
    """A text column stored as a Fernet token; Python code only ever sees the plaintext."""

    def from_db_value(self, value, expression, connection):
        if value is None or value == "":
            return value
        return decrypt(value)

    def get_prep_value(self, value):
        if value is None or value == "":
            return value
        return encrypt(str(value))


def new_token() -> str:
    return "sctp_" + secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()

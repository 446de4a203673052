"""Secrets at rest: Fernet encryption for kubeconfigs and webhook secrets, SHA-256 digests for API tokens.

FIELD_ENCRYPTION_KEY holds one or more comma-separated Fernet keys. The first encrypts; all of
them decrypt, so a key is rotated by putting the new key first, running
`manage.py rotate_encryption_key` (re-encrypts every row with the first key), then dropping
the old key. Without FIELD_ENCRYPTION_KEY, and only with DEBUG on (development), a key is
derived from SECRET_KEY.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models.query_utils import DeferredAttribute


def _keys() -> list[bytes]:
    raw = [k.strip() for k in (settings.FIELD_ENCRYPTION_KEY or "").split(",") if k.strip()]
    if not raw:
        if not settings.DEBUG:
            raise ImproperlyConfigured(
                "FIELD_ENCRYPTION_KEY is not set: with DEBUG=false nothing is derived from "
                "SECRET_KEY (python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())')"
            )
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


class Sealed:
    """A stored Fernet token not decrypted yet: loading a row never decrypts its secrets."""

    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token

    def __repr__(self) -> str:
        return "<sealed secret>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sealed) and other.token == self.token

    def __hash__(self) -> int:
        return hash(self.token)


class DecryptOnAccess(DeferredAttribute):
    """Decrypts the first time the attribute is read, so only code that needs a secret decrypts it.

    A page that loads clusters (readiness, the matrix, the API's list) never reads the field, so
    one row encrypted under a lost key cannot make it fail; the worker that needs the kubeconfig
    gets ImproperlyConfigured saying why.
    """

    def __get__(self, instance: Any, cls: Any = None) -> Any:
        value = super().__get__(instance, cls)
        if isinstance(value, Sealed):
            value = decrypt(value.token)
            instance.__dict__[self.field.attname] = value
        return value

    def __set__(self, instance: Any, value: Any) -> None:
        # A data descriptor, so reads come here rather than straight from instance.__dict__.
        instance.__dict__[self.field.attname] = value


class EncryptedTextField(models.TextField):  # type: ignore[type-arg]
    """A text column stored as a Fernet token; Python code only ever sees the plaintext."""

    descriptor_class = DecryptOnAccess

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if value is None or value == "":
            return value
        return Sealed(value)

    def pre_save(self, model_instance: Any, add: bool) -> Any:
        # Saving other fields must not decrypt (nor fail on) a secret nobody read.
        return model_instance.__dict__.get(self.attname)

    def get_prep_value(self, value: Any) -> Any:
        if value is None or value == "":
            return value
        if isinstance(value, Sealed):
            return value.token  # unchanged since loaded: stored as it was
        return encrypt(str(value))

    def to_python(self, value: Any) -> Any:
        return value if isinstance(value, Sealed) else super().to_python(value)


class SealedSecrets(models.Model):
    """For models with EncryptedTextFields: refresh_from_db() reloads them sealed, not decrypted
    (Django's would read each field, so refreshing a cluster would decrypt its kubeconfig)."""

    class Meta:
        abstract = True

    def refresh_from_db(
        self, using: str | None = None, fields: Any = None, from_queryset: Any = None
    ) -> None:
        if fields is None:
            sealed = {
                f.attname for f in self._meta.concrete_fields if isinstance(f, EncryptedTextField)
            }
            fields = [f.attname for f in self._meta.concrete_fields if f.attname not in sealed]
            for name in sealed:  # deferred: loaded (sealed) again when next read
                self.__dict__.pop(name, None)
        super().refresh_from_db(using=using, fields=fields, from_queryset=from_queryset)


def is_decryptable(token: str) -> bool:
    try:
        fernet().decrypt(token.encode())
    except (InvalidToken, ValueError, TypeError):
        return False
    return True


TOKEN_PREFIX = "sctp_"


def new_token() -> str:
    """`sctp_<public id>_<secret>`: the public id (6 hex digits) tells tokens apart in hints,
    lists and `uploaded_by`; the secret part (256 bits) is never shown anywhere."""
    return f"{TOKEN_PREFIX}{secrets.token_hex(3)}_{secrets.token_urlsafe(32)}"


def token_hint(token: str) -> str:
    """The public part of a token (`sctp_1a2b3c`); never a character of the secret."""
    head, sep, _ = token.removeprefix(TOKEN_PREFIX).partition("_")
    if not sep or len(head) != 6:
        raise ValueError("not a token of the current format")
    return TOKEN_PREFIX + head


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


# scheme://user:password@host → scheme://host, wherever a URL appears in a text.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]*@")


def strip_url_credentials(value: Any) -> Any:
    """The value with the user info of every URL in it removed (strings inside dicts and lists too)."""
    if isinstance(value, str):
        return _URL_USERINFO.sub(r"\1", value)
    if isinstance(value, dict):
        return {k: strip_url_credentials(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strip_url_credentials(v) for v in value]
    return value

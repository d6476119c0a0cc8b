"""Encryption at rest for secrets the service must read back (credentials in probe targets).

Fernet (AES-128-CBC with HMAC-SHA256, from `cryptography`) under the keys in
`FIELD_ENCRYPTION_KEYS`: the first key encrypts, every key decrypts, so a key is rotated by
putting a new one first and re-saving rows at leisure. The keys are independent of
`SECRET_KEY`, so rotating the signing key never makes stored targets unreadable.
"""

import json
from functools import cache
from typing import Any, Self, TypeVar

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.expressions import Expression

_M = TypeVar("_M", bound=models.Model)


class DecryptionError(ImproperlyConfigured):
    """A stored value cannot be decrypted with any configured key."""


@cache
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key) for key in keys])


def encrypt(plaintext: str) -> str:
    """Encrypt text under the current (first) key."""
    return _fernet(tuple(settings.FIELD_ENCRYPTION_KEYS)).encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    """Decrypt text encrypted under any configured key."""
    try:
        return _fernet(tuple(settings.FIELD_ENCRYPTION_KEYS)).decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise DecryptionError(
            "A stored secret cannot be decrypted: FIELD_ENCRYPTION_KEYS lacks the key it was "
            "encrypted with."
        ) from exc


class EncryptedTextField(models.TextField):
    """Text stored encrypted; the model attribute holds the clear value.

    Ciphertexts differ on every save, so the column can neither be searched nor indexed.
    """

    def get_prep_value(self, value: Any) -> Any:
        """Encrypt on the way to the database."""
        value = super().get_prep_value(value)
        return None if value is None else encrypt(self._dump(value))

    def from_db_value(
        self, value: str | None, expression: Expression, connection: BaseDatabaseWrapper
    ) -> Any:
        """Decrypt on the way from the database."""
        return None if value is None else self._load(decrypt(value))

    def to_python(self, value: Any) -> Any:
        """Values already in Python form stay as they are."""
        return value

    def _dump(self, value: Any) -> str:
        return str(value)

    def _load(self, text: str) -> Any:
        return text


class EncryptedJSONField(EncryptedTextField):
    """A JSON document stored encrypted."""

    # django-stubs reads a field's Python types from these (TextField says str).
    _pyi_private_set_type: Any
    _pyi_private_get_type: Any

    def get_prep_value(self, value: Any) -> Any:
        """Serialise, then encrypt."""
        return None if value is None else encrypt(self._dump(value))

    def _dump(self, value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), sort_keys=True)

    def _load(self, text: str) -> Any:
        return json.loads(text)


@cache
def _encrypted_names(model: type[models.Model]) -> tuple[str, ...]:
    fields = model._meta.concrete_fields
    return tuple(field.name for field in fields if isinstance(field, EncryptedTextField))


def encrypted_fields(model: type[models.Model], through: str = "") -> tuple[str, ...]:
    """Name a model's encrypted fields, under a relation's path when one is given.

    What `defer()` takes to read rows, or the rows they relate to (`through="endpoint"`,
    `"update__incident__endpoint"`), without decrypting anything: read from the fields
    themselves, so a secret added later is deferred wherever its model's are.
    """
    prefix = f"{through}__" if through else ""
    return tuple(prefix + name for name in _encrypted_names(model))


class SecretsQuerySet(models.QuerySet[_M]):
    """A queryset of a model with encrypted fields."""

    def without_secrets(self) -> Self:
        """Leave the encrypted fields unread: for reads that show, filter or name rows."""
        return self.defer(*encrypted_fields(self.model))

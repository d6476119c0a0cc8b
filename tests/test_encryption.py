"""Secrets at rest: Fernet under FIELD_ENCRYPTION_KEYS, rotatable, never in clear in a row."""

import io

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection

from healthmon.encryption import DecryptionError, decrypt, encrypt
from monitoring.models import Endpoint

TARGET = "redis://:redis-pass-77@cache.test:6379/0"


def raw_row(endpoint_id):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT target, config FROM monitoring_endpoint WHERE id = %s",
            [endpoint_id.hex] if connection.vendor == "sqlite" else [endpoint_id],
        )
        return cursor.fetchone()


def test_round_trip_and_a_new_ciphertext_each_time():
    assert decrypt(encrypt("s3cret")) == "s3cret"
    assert encrypt("s3cret") != encrypt("s3cret")


def test_rows_hold_ciphertext_only(cast, make_endpoint):
    endpoint = make_endpoint(cast.project, type="redis", target=TARGET)

    target, config = raw_row(endpoint.id)

    assert "redis-pass-77" not in target
    assert "cache.test" not in target
    assert config.startswith("gAAAA")  # a Fernet token
    assert Endpoint.objects.get().target == TARGET


def test_a_new_first_key_encrypts_while_old_keys_still_decrypt(cast, make_endpoint, settings):
    old_key = settings.FIELD_ENCRYPTION_KEYS[0]
    endpoint = make_endpoint(cast.project, type="redis", target=TARGET)
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode(), old_key]

    assert Endpoint.objects.get(pk=endpoint.pk).target == TARGET
    call_command("reencrypt_secrets", stdout=io.StringIO())
    settings.FIELD_ENCRYPTION_KEYS = settings.FIELD_ENCRYPTION_KEYS[:1]  # old key retired
    assert Endpoint.objects.get(pk=endpoint.pk).target == TARGET


def test_a_missing_key_fails_loudly_rather_than_returning_garbage(cast, make_endpoint, settings):
    endpoint = make_endpoint(cast.project, type="redis", target=TARGET)
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]

    with pytest.raises(DecryptionError, match="FIELD_ENCRYPTION_KEYS"):
        Endpoint.objects.get(pk=endpoint.pk)

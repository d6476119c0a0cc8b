"""Secrets at rest: Fernet under FIELD_ENCRYPTION_KEYS, rotatable, never in clear in a row."""

import io

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection, models
from django.test.utils import isolate_apps

from alerts.models import MaintenanceWindow, NotificationChannel
from alerts.services import channel_create
from healthmon.encryption import (
    DecryptionError,
    EncryptedJSONField,
    EncryptedTextField,
    decrypt,
    encrypt,
    encrypted_fields,
)
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


def test_the_encrypted_fields_are_named_from_the_models_fields():
    assert encrypted_fields(Endpoint) == ("target", "config")
    assert encrypted_fields(NotificationChannel) == ("config", "secret")
    assert encrypted_fields(MaintenanceWindow) == ()
    assert encrypted_fields(Endpoint, "update__incident__endpoint") == (
        "update__incident__endpoint__target",
        "update__incident__endpoint__config",
    )


@isolate_apps("monitoring")
def test_a_secret_added_to_a_model_is_named_with_the_others():
    class Probe(models.Model):
        name = models.CharField(max_length=20)
        password = EncryptedTextField()
        headers = EncryptedJSONField(default=dict)

        class Meta:
            app_label = "monitoring"

        def __str__(self) -> str:
            return self.name

    assert encrypted_fields(Probe, "probe") == ("probe__password", "probe__headers")


def test_endpoints_without_secrets_are_read_without_decrypting(cast, make_endpoint, request):
    made = make_endpoint(cast.project, type="redis", target=TARGET)
    request.getfixturevalue("endpoint_secrets_unread")

    (endpoint,) = Endpoint.objects.for_org(cast.org).without_secrets()

    assert (endpoint.pk, endpoint.name, endpoint.target_masked) == (
        made.pk,
        made.name,
        made.target_masked,
    )
    with pytest.raises(AssertionError, match="decrypted"):
        Endpoint.objects.get(pk=made.pk)  # the fixture bites on a plain read


def test_channels_without_secrets_are_read_without_decrypting(cast, monkeypatch):
    made = channel_create(
        organization=cast.org, name="Hook", kind="webhook", config={"url": "https://h.test/x"}
    )

    def refuse(*args):
        raise AssertionError("a channel's config or secret was decrypted")

    for name in ("config", "secret"):
        monkeypatch.setattr(NotificationChannel._meta.get_field(name), "from_db_value", refuse)

    (channel,) = NotificationChannel.objects.for_org(cast.org).without_secrets()

    assert (channel.pk, channel.name, channel.kind) == (made.pk, "Hook", "webhook")
    with pytest.raises(AssertionError, match="decrypted"):
        NotificationChannel.objects.get(pk=made.pk)

"""Channel URLs are credentials, encrypted at rest: the bytes the database holds for a
channel created or changed over the API (read with a cursor, past the ORM's decryption)
hold no token, password or secret path of its URL (nor a webhook's signing secret),
whatever the kind; nor does any other table. The ORM still reads the full URL back (the
test is not vacuous)."""

from typing import Any

import pytest
from django.db import connection

from alerts.models import NotificationChannel

pytestmark = pytest.mark.django_db

URL = "/api/v1/notification-channels"
# (kind, URL, the parts of it that are secret)
CASES = [
    ("apprise", "ntfy://tk_Sup3rSecretT0ken9@ntfy.sh/ops", ["tk_Sup3rSecretT0ken9"]),
    (
        "apprise",
        "json://ops:Hunter2-Pass@hooks.example.com/in/PATH-T0KEN-42",
        ["Hunter2-Pass", "PATH-T0KEN-42"],
    ),
    (
        "apprise",
        "tgram://123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/-1001234567",
        ["AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"],
    ),
    (
        "apprise",
        "pover://uQiRzpo4DXghDmr9QzzfQu27cmVRsG@azGDORePK8gMaC0QOYAMyEEuzJnyUi",
        ["uQiRzpo4DXghDmr9QzzfQu27cmVRsG", "azGDORePK8gMaC0QOYAMyEEuzJnyUi"],
    ),
    (
        "apprise",
        "mailtos://ops:Mail-Pw-77@smtp.example.com?to=a@example.com",
        ["Mail-Pw-77"],
    ),
    (
        "webhook",
        "https://hook-user:Hook-Pw-31@hooks.example.com/in/WH-PATH-SECRET?token=WH-QUERY-SECRET",
        ["Hook-Pw-31", "WH-PATH-SECRET", "WH-QUERY-SECRET"],
    ),
    (
        "slack",
        "https://hooks.slack.com/services/T0AAA/B0BBB/SlackSecretXyz123",
        ["SlackSecretXyz123"],
    ),
    (
        "teams",
        "https://acme.webhook.office.com/webhookb2/TeamsSecret-77/IncomingWebhook/abc",
        ["TeamsSecret-77"],
    ),
    (
        "discord",
        "https://discord.com/api/webhooks/1234/DiscordSecretTok3n",
        ["DiscordSecretTok3n"],
    ),
]


def stored_text(table: str, where: str = "", params: tuple[Any, ...] = ()) -> str:
    """Every value of a table's rows as the database hands them over, as one string."""
    quoted = connection.ops.quote_name(table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {quoted} {where}", params)  # noqa: S608 - names from introspection
        rows = cursor.fetchall()
    return "\n".join(_text(value) for row in rows for value in row)


def _text(value: Any) -> str:
    if isinstance(value, memoryview):
        value = value.tobytes()
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return str(value)


def channel_row(channel_id: str) -> str:
    """The channel's own row, read with a cursor (no field decrypts anything)."""
    table = NotificationChannel._meta.db_table
    pk = NotificationChannel._meta.pk
    assert pk is not None
    key = pk.get_db_prep_value(NotificationChannel._meta.pk.to_python(channel_id), connection)
    text = stored_text(table, f"WHERE {connection.ops.quote_name(pk.column)} = %s", (key,))
    assert text, "the channel's row was not found"
    return text


def everything() -> str:
    """Every table's rows (a secret copied into an audit entry or a log table counts too)."""
    return "\n".join(stored_text(table) for table in connection.introspection.table_names())


@pytest.mark.parametrize(("kind", "url", "secrets"), CASES, ids=[c[1][:20] for c in CASES])
def test_a_created_channels_secrets_are_not_stored_in_clear(api, cast, kind, url, secrets):
    response = api.as_user(cast.owner).post(
        URL, {"name": "Ops", "kind": kind, "config": {"url": url}}, format="json"
    )
    assert response.status_code == 201, response.content

    row = channel_row(response.json()["id"])
    # A webhook's signing secret, answered once, is a credential too.
    signing = [response.json()["secret"]] if kind == "webhook" else []

    assert NotificationChannel.objects.get().config["url"] == url  # the ORM decrypts it
    assert url not in row
    for secret in [*secrets, *signing]:
        assert secret not in row
        assert secret not in everything()


@pytest.mark.parametrize(("kind", "url", "secrets"), CASES, ids=[c[1][:20] for c in CASES])
def test_a_url_changed_by_a_patch_is_not_stored_in_clear(api, cast, kind, url, secrets):
    first = {"webhook": "https://a.example.com/", "apprise": "ntfy://ntfy.sh/first"}.get(
        kind, "https://hooks.example.com/"
    )
    api.as_user(cast.owner)
    created = api.post(URL, {"name": "Ops", "kind": kind, "config": {"url": first}}, format="json")
    assert created.status_code == 201, created.content

    changed = api.patch(f"{URL}/{created.json()['id']}", {"config": {"url": url}}, format="json")

    assert changed.status_code == 200, changed.content
    assert NotificationChannel.objects.get().config["url"] == url
    row = channel_row(created.json()["id"])
    for secret in secrets:
        assert secret not in row
        assert secret not in everything()

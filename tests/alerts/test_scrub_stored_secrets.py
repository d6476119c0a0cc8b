"""`manage.py scrub_stored_secrets`: rows stored before probes masked every form of a secret."""

import base64
import uuid
from io import StringIO
from urllib.parse import quote

import pytest
from django.core.management import call_command
from django.utils import timezone

from alerts.models import Delivery, NotificationEvent
from monitoring.models import CheckResult, Incident
from tests.alerts.receiver import webhook

PASSWORD = "Sup3r-secret pw!"
BASIC = base64.b64encode(f"probe:{PASSWORD}".encode()).decode()


@pytest.fixture
def leaky(cast, make_endpoint):
    """An endpoint whose stored rows quote its password as an old version stored them."""
    endpoint = make_endpoint(
        cast.project, type="graphql", target=f"http://probe:{quote(PASSWORD)}@example.com/gql"
    )
    now = timezone.now()
    CheckResult.objects.create(
        endpoint=endpoint,
        scheduled_for=now,
        checked_at=now,
        ok=False,
        response_time_ms=12.0,
        error=f"GraphQL error: bad auth=Basic {BASIC}",
        status_detail=f"sent {quote(PASSWORD)}",
    )
    CheckResult.objects.create(
        endpoint=endpoint,
        scheduled_for=now.replace(year=now.year - 1),
        checked_at=now,
        ok=False,
        response_time_ms=12.0,
        error="connection refused",
    )
    incident = Incident.objects.create(
        endpoint=endpoint, started_at=now, cause=f"GraphQL error: bad auth=Basic {BASIC}"
    )
    Delivery.objects.create(
        channel=webhook(cast, "https://hooks.example.com/x"),
        event=NotificationEvent.OPENED,
        event_id=uuid.uuid4(),
        incident=incident,
        occurred_at=now,
        payload={"incident": {"cause": f"auth=Basic {BASIC}", "lines": ["a\nb"]}},
        last_error=f"echoed {PASSWORD}",
    )
    return endpoint


def _stored_text() -> str:
    rows = [
        *CheckResult.objects.values_list("error", "status_detail"),
        *Incident.objects.values_list("cause"),
        *Delivery.objects.values_list("payload", "last_error"),
    ]
    return repr(rows)


def test_every_stored_form_of_a_target_secret_is_masked(leaky):
    assert BASIC in _stored_text()

    out = StringIO()
    call_command("scrub_stored_secrets", stdout=out)

    text = _stored_text()
    assert BASIC[:8] not in text
    assert PASSWORD not in text
    assert quote(PASSWORD) not in text
    assert "1 endpoints with secrets looked at, 3 rows masked." in out.getvalue()
    # What quoted no secret is left as it was.
    assert CheckResult.objects.filter(error="connection refused").exists()
    assert Delivery.objects.get().payload["incident"]["lines"] == ["a\nb"]


def test_a_second_run_changes_nothing(leaky):
    call_command("scrub_stored_secrets", stdout=StringIO())
    before = _stored_text()
    out = StringIO()

    call_command("scrub_stored_secrets", stdout=out)

    assert _stored_text() == before
    assert "0 rows masked" in out.getvalue()

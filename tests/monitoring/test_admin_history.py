"""Django admin pages of checks, incidents and status changes: listed, read-only."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from monitoring.checks import CheckOutcome
from monitoring.models import CheckResult, Incident, StatusChange
from monitoring.probes import ProbeResult
from pipeline.checks import checks_record

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def endpoint(cast, make_endpoint):
    endpoint = make_endpoint(
        cast.project, type="postgresql", target="postgresql://app:pw-secret-9@db.test:5432/app"
    )
    outcomes = [
        CheckOutcome(endpoint.pk, at, at, ProbeResult(False, 3.0, "", "connection refused"))
        for at in (T0, T0 + timedelta(minutes=1))
    ]
    checks_record(outcomes=outcomes)
    return endpoint


@pytest.mark.parametrize(
    ("model", "text"),
    [
        (CheckResult, "connection refused"),
        (Incident, "ongoing"),
        (StatusChange, "down"),
    ],
)
def test_history_lists_render_without_secrets(staff_client, endpoint, model, text):
    opts = model._meta
    listed = staff_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
    record = model.objects.first()
    detail = staff_client.get(
        reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[record.pk])
    )

    assert listed.status_code == 200
    assert text in listed.content.decode()
    assert detail.status_code == 200
    for page in (listed, detail):
        assert b"pw-secret-9" not in page.content


@pytest.mark.parametrize("model", [CheckResult, Incident, StatusChange])
def test_history_cannot_be_added_or_edited_by_hand(staff_client, endpoint, model):
    opts = model._meta
    record = model.objects.first()
    add = staff_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_add"))
    edit = staff_client.post(
        reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[record.pk]), {}
    )

    assert add.status_code == 403
    assert edit.status_code == 403

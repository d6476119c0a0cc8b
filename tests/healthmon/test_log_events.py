"""Event lines (issue 19, item 5): refused credentials and a lagging dispatcher."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apikeys.models import ApiKey
from monitoring import scheduler
from monitoring.models import Endpoint
from tests.helpers import PASSWORD

pytestmark = pytest.mark.django_db


def test_a_wrong_password_is_logged_without_the_password(api, cast, log_lines):
    response = api.post(
        "/api/v1/auth/login", {"email": "owner@acme.test", "password": "Wrong-horse-9"}
    )

    assert response.status_code == 401
    (line,) = log_lines.events("auth_failed")
    assert (line["method"], line["level"]) == ("password", "warning")
    assert line["request_id"] == response["X-Request-ID"]
    assert "Wrong-horse-9" not in log_lines.text()
    assert PASSWORD not in log_lines.text()


def test_a_bad_jwt_is_logged_without_the_token(api, cast, log_lines):
    response = api.get("/api/v1/endpoints", HTTP_AUTHORIZATION="Bearer not.a.jwt")

    assert response.status_code == 401
    (line,) = log_lines.events("auth_failed")
    assert line["method"] == "jwt"
    assert "not.a.jwt" not in log_lines.text()


def test_an_unknown_api_key_is_logged_by_its_prefix_only(api, cast, make_key, log_lines):
    key = make_key(cast.owner)
    ApiKey.objects.all().delete()

    response = api.with_key(key).get("/api/v1/endpoints")

    assert response.status_code == 401
    (line,) = log_lines.events("auth_failed")
    assert line["method"] == "api_key"
    assert key.startswith(line["key_prefix"])
    assert len(line["key_prefix"]) < len(key) - 20
    assert key not in log_lines.text()


def test_a_dispatcher_tick_over_a_second_late_is_a_warning(cast, make_endpoint, log_lines):
    endpoint = make_endpoint(cast.project)
    now = timezone.now()
    Endpoint.objects.filter(pk=endpoint.pk).update(next_check_at=now - timedelta(seconds=5))

    scheduler.dispatch(now=now, batch_size=200)

    (line,) = log_lines.events("dispatcher_lag")
    assert line["level"] == "warning"
    assert line["lag_seconds"] == pytest.approx(5, abs=0.01)
    assert line["claimed"] == 1


def test_a_punctual_dispatcher_tick_is_quiet(cast, make_endpoint, log_lines):
    endpoint = make_endpoint(cast.project)
    now = timezone.now()
    Endpoint.objects.filter(pk=endpoint.pk).update(next_check_at=now - timedelta(seconds=0.5))

    scheduler.dispatch(now=now, batch_size=200)

    assert log_lines.events("dispatcher_lag") == []

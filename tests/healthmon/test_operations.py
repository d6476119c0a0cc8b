"""The operations routes (API-CONTRACT.md, Operations): /healthz, /readyz, /metrics.

The broker here is Celery's in-memory one; tests/faults/test_operations.py stops a real
Redis under /readyz and compares /metrics with the checks a run stored.
"""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.db.utils import OperationalError
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from monitoring import scheduler

NOW = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)


def _refused(execute, sql, params, many, context):
    raise OperationalError("connection to server at 127.0.0.1, port 5432 failed: refused")


def _dispatch(at: datetime) -> None:
    """One dispatcher tick, as beat runs it."""
    scheduler.dispatch(now=at, batch_size=200)


@pytest.fixture
def client():
    return Client()


def test_healthz_answers_ok_without_touching_the_database_or_the_broker(client, monkeypatch):
    # No django_db mark: any query fails the test; the broker is gone too.
    monkeypatch.setattr("healthmon.health.Connection", None)
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_is_ok_when_every_dependency_is(client):
    with time_machine.travel(NOW, tick=False):
        _dispatch(timezone.now())
        response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checks": {"database": "ok", "broker": "ok", "dispatcher": "ok"},
    }


@pytest.mark.django_db
def test_readyz_names_the_database_when_it_is_unreachable(client):
    _dispatch(timezone.now())
    with connection.execute_wrapper(_refused):
        response = client.get("/readyz")

    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "unavailable"
    assert "database" in body["failing"]
    assert body["checks"]["database"].startswith("unreachable")
    assert body["checks"]["broker"] == "ok"


@pytest.mark.django_db
def test_readyz_names_the_dispatcher_after_60_seconds_of_silence(client):
    with time_machine.travel(NOW, tick=False) as clock:
        _dispatch(timezone.now())
        clock.shift(timedelta(seconds=60))
        still = client.get("/readyz")
        clock.shift(timedelta(seconds=1))
        silent = client.get("/readyz")
        _dispatch(timezone.now())
        again = client.get("/readyz")

    assert still.status_code == 200
    assert silent.status_code == 503
    assert silent.json()["failing"] == ["dispatcher"]
    assert silent.json()["checks"]["dispatcher"] == "silent for 61 s"
    assert again.status_code == 200


@pytest.mark.django_db
def test_readyz_names_a_dispatcher_that_never_ran(client):
    response = client.get("/readyz")

    assert response.status_code == 503
    assert response.json()["failing"] == ["dispatcher"]
    assert response.json()["checks"]["dispatcher"] == "never ran"


def test_the_operations_routes_need_no_https_redirect(settings, client):
    settings.SECURE_SSL_REDIRECT = True

    assert client.get("/healthz").status_code == 200


@pytest.mark.django_db
def test_metrics_answer_404_when_turned_off(settings, client):
    settings.METRICS_ENABLED = False

    assert client.get("/metrics").status_code == 404


def _requests(client: Client, method: str, route: str, status: int) -> float:
    """healthmon_http_requests_total for these labels, as /metrics shows it now.

    Every process of the checkout shares the counters (and a test run may run beside this
    one), so tests look for an increase, not a value.
    """
    text = client.get("/metrics", secure=True).content.decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = {"method": method, "route": route, "status": str(status)}
            if sample.name == "healthmon_http_requests_total" and sample.labels == labels:
                return sample.value
    return 0.0


@pytest.mark.django_db
def test_metrics_are_prometheus_text_when_no_token_is_set(settings, client):
    settings.METRICS_TOKEN = ""
    before = _requests(client, "GET", "healthz", 200)
    client.get("/healthz")
    response = client.get("/metrics")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert 'healthmon_queue_depth{queue="celery"}' in response.content.decode()
    assert _requests(client, "GET", "healthz", 200) > before


@pytest.mark.django_db
def test_metrics_want_the_bearer_token_when_one_is_set(settings, client):
    settings.METRICS_TOKEN = "metrics-token-for-the-scraper-0123456789"

    missing = client.get("/metrics")
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token")
    basic = client.get("/metrics", HTTP_AUTHORIZATION="Basic bWV0cmljczp4")
    right = client.get(
        "/metrics", HTTP_AUTHORIZATION="Bearer metrics-token-for-the-scraper-0123456789"
    )

    assert missing.status_code == 401
    assert missing["WWW-Authenticate"].startswith("Bearer")
    assert wrong.status_code == 403
    assert basic.status_code == 401
    assert right.status_code == 200
    assert b"healthmon_http_requests_total" in right.content


@pytest.mark.django_db
def test_metrics_name_routes_by_template_not_by_url(client, cast, api):
    detail = _requests(client, "GET", "api/v1/projects/<pk>", 200)
    unmatched = _requests(client, "GET", "unmatched", 404)
    api.as_user(cast.owner)
    api.get(f"/api/v1/projects/{cast.project.pk}")
    nowhere = uuid.uuid4().hex
    client.get(f"/no/such/page/{nowhere}")
    text = client.get("/metrics").content.decode()

    assert _requests(client, "GET", "api/v1/projects/<pk>", 200) > detail
    assert _requests(client, "GET", "unmatched", 404) > unmatched
    assert str(cast.project.pk) not in text
    assert nowhere not in text


@pytest.mark.django_db
def test_metrics_keep_made_up_methods_out_of_their_labels(client):
    before = _requests(client, "other", "healthz", 405)
    client.generic("BREW", "/healthz")

    assert _requests(client, "other", "healthz", 405) > before


@pytest.mark.django_db
def test_metrics_name_the_route_of_a_request_redirected_to_https(settings, client):
    before = _requests(client, "GET", "api/v1/projects", 301)
    settings.SECURE_SSL_REDIRECT = True
    redirecting = Client()
    assert redirecting.get("/api/v1/projects").status_code == 301

    assert _requests(client, "GET", "api/v1/projects", 301) > before

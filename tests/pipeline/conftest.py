"""Heartbeat fixtures of the pipeline tests: a heartbeat made through the API, pings sent
through the ping routes at a moment, and the deadline task run as beat runs it."""

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from django.test import Client

from monitoring.models import Endpoint
from pipeline.tasks import run_heartbeat_deadlines

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def make_heartbeat(api: Any, cast: Any) -> Callable[..., Endpoint]:
    """A heartbeat of the cast's project made through the API at T0 (60 s period, 60 s
    grace unless told otherwise)."""

    def make(name: str = "Nightly backup", **fields: Any) -> Endpoint:
        body = {"project": str(cast.project.id), "name": name, "type": "heartbeat"}
        body.update({"interval_seconds": 60, "config": {"grace_seconds": 60}}, **fields)
        with time_machine.travel(T0, tick=False):
            response = api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")
        assert response.status_code == 201, response.content
        return Endpoint.objects.get(pk=response.json()["id"])

    return make


@pytest.fixture
def settle(django_capture_on_commit_callbacks: Any) -> Callable[[datetime], list[int]]:
    """Run the deadline task at a moment, as beat does, sending what it queues.

    Pings may be stored first and turned into checks by this task a moment later, so the
    tests run it after pinging and before looking at checks, statuses or incidents; with
    no deadline passed it only processes the pings still pending."""

    def run(at: datetime) -> list[int]:
        with time_machine.travel(at, tick=False), django_capture_on_commit_callbacks(execute=True):
            return run_heartbeat_deadlines()

    return run


@pytest.fixture
def send_ping(
    client: Client,
    django_capture_on_commit_callbacks: Any,
    settle: Callable[[datetime], list[int]],
) -> Callable[..., Any]:
    """Ping a heartbeat's route at a moment (its on-commit work run), then settle then."""

    def send(endpoint: Endpoint, suffix: str = "", at: datetime = T0, **extra: Any) -> Any:
        with time_machine.travel(at, tick=False), django_capture_on_commit_callbacks(execute=True):
            response = client.get(f"/ping/{endpoint.ping_key}{suffix}", **extra)
        assert response.status_code == 200, response.content
        settle(at)
        return response

    return send

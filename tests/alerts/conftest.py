"""Fixtures of the notification tests that send to a real local receiver."""

from collections.abc import Callable
from typing import Any

import pytest
from django.utils import timezone

from monitoring.models import Endpoint


@pytest.fixture
def loopback_allowed(settings: Any) -> None:
    """The receivers listen on loopback, which the policy allows only when told."""
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = False
    settings.PROBE_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.NOTIFY_RETRY_BASE_SECONDS = 30
    settings.NOTIFY_MAX_ATTEMPTS = 6
    settings.NOTIFY_FLAG_AFTER = 3


@pytest.fixture
def endpoint(cast: Any, make_endpoint: Callable[..., Endpoint]) -> Endpoint:
    return make_endpoint(cast.project, name="Checkout API", failure_threshold=1)


@pytest.fixture
def go_down(record: Callable[..., int], django_capture_on_commit_callbacks: Any) -> Callable:
    """Store a failed, then (optionally) a successful check, running on-commit work."""

    def run(endpoint: Endpoint, ok: bool = False, at: Any = None) -> None:
        at = at or timezone.now()
        with django_capture_on_commit_callbacks(execute=True):
            record(endpoint, [(at, ok, 20.0, "" if ok else "unexpected status 503")])

    return run

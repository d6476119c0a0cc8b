"""Analytics fixtures: checks recorded through the real ingest path at chosen times."""

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import pytest

from monitoring.models import Endpoint
from monitoring.probes import ProbeResult
from monitoring.services import CheckOutcome, checks_record

Check = tuple[datetime, bool, float] | tuple[datetime, bool, float, str]


@pytest.fixture
def record() -> Callable[..., int]:
    """Store checks of one endpoint as workers do (rollups, status and incidents follow)."""

    def store(endpoint: Endpoint, checks: Sequence[Check]) -> int:
        outcomes = []
        for check in checks:
            at, ok, ms, *rest = check
            error = rest[0] if rest else ("" if ok else "connection refused")
            result = ProbeResult(ok=ok, response_time_ms=ms, error=error, started_at=at.timestamp())
            outcomes.append(CheckOutcome(endpoint.pk, at, at, result))
        return checks_record(outcomes=outcomes)

    return store


def figures(response: Any) -> list[dict[str, Any]]:
    """The results of an analytics page, asserting it is one."""
    assert response.status_code == 200, response.content
    return response.json()["results"]

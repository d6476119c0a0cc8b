"""Assertions and constants shared by the test modules."""

from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

PASSWORD = "correct-horse-battery-9"


def assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    """The response is problem+json with this status and code; returns the body."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"].startswith("https://healthmon.dev/errors/")
    assert body["title"]
    assert body["detail"]
    return body


def queries_of_get(client: Any, path: str) -> int:
    """The queries a GET of the path makes (it must answer 200)."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200, response.content
    return len(captured)

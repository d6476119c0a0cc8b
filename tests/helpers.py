"""Assertions and constants shared by the test modules."""

from typing import Any

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

"""Analytics helpers (the `record` fixture that stores checks is in tests/conftest.py)."""

from typing import Any


def figures(response: Any) -> list[dict[str, Any]]:
    """The results of an analytics page, asserting it is one."""
    assert response.status_code == 200, response.content
    return response.json()["results"]

"""Assertions, constants and small pure helpers shared by the test modules.

Fixtures and factories that need the database or other fixtures are in tests/conftest.py.
"""

import os
import re
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Model
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

PASSWORD = "correct-horse-battery-9"
LOGIN = "/api/v1/auth/login"
ACCEPT_INVITE = "/api/v1/auth/accept-invite"


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


def mailed_token(message: Any, path: str) -> str:
    """The token of the site link (`/reset-password`, `/accept-invite`, ...) in a mail."""
    match = re.search(rf"https://healthmon\.test{re.escape(path)}\?token=(\S+)", message.body)
    assert match, message.body
    return match.group(1)


def log_in(api: Any, email: str, password: str = PASSWORD) -> Any:
    """Sign in through the API."""
    return api.post(LOGIN, {"email": email, "password": password})


def accept_invite(api: Any, token: str, password: str = PASSWORD) -> Any:
    """Accept an invitation through the API."""
    return api.post(ACCEPT_INVITE, {"token": token, "password": password})


def admin_url(model: type[Model] | Model, view: str, *args: Any) -> str:
    """The Django admin's URL of a model's view (`changelist`, `change`, ...)."""
    opts = model._meta
    return reverse(f"admin:{opts.app_label}_{opts.model_name}_{view}", args=args)


def iso(moment: datetime) -> str:
    """A UTC moment as the API writes it (`...Z`)."""
    return moment.isoformat().replace("+00:00", "Z")


def in_ci() -> bool:
    """Whether this run is CI's (`CI=true`), where no tier may be skipped for a missing tool."""
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}

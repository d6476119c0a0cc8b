"""Run requests at the same moment in threads, for the races only PostgreSQL can show."""

import json
import threading
from collections.abc import Callable

from django.db import connections
from rest_framework.test import APIClient

from accounts.models import User
from accounts.tokens import issue_access_token


def race(*calls: Callable[[], int]) -> list[int]:
    """Run the calls at the same moment in threads; return their status codes in order."""
    barrier = threading.Barrier(len(calls))
    results: list[int] = [0] * len(calls)

    def run(index: int, call: Callable[[], int]) -> None:
        try:
            barrier.wait()
            results[index] = call()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def call(method: str, path: str, body: dict | None = None, user: User | None = None):
    """A request to run later in `race`; returns its status code."""

    def run() -> int:
        api = APIClient()
        if user is not None:
            api.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_access_token(user).token}")
        payload = json.dumps(body) if body is not None else ""
        return api.generic(method, path, payload, content_type="application/json").status_code

    return run

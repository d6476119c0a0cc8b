"""Fault tests with real processes: each test gets a Redis server of its own, and the
Celery workers and beat it starts on it, against the test database."""

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from accounts.models import Project
from monitoring.models import Endpoint
from tests.faults.processes import Processes, RedisServer, database_url
from tests.faults.targets import CountingTarget


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def processes(tmp_path: Path, redis_server: RedisServer) -> Iterator[Processes]:
    """Starts workers and beat on the test's Redis; stops them after the test."""
    started = Processes(
        tmp_path,
        {
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": redis_server.url(),
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "PROBE_ALLOW_PRIVATE_NETWORKS": "true",
        },
    )
    try:
        yield started
    finally:
        started.stop_all()
        started.print_logs()


@pytest.fixture
def counting_target() -> Iterator[CountingTarget]:
    target = CountingTarget()
    try:
        yield target
    finally:
        target.stop()


@pytest.fixture
def endpoints_on(make_endpoint: Callable[..., Endpoint]) -> Callable[..., list[Endpoint]]:
    """`count` HTTP endpoints on the target, one path each (`/e/<n>`), due at once."""

    def make(
        project: Project, target: CountingTarget, count: int, **fields: object
    ) -> list[Endpoint]:
        return [
            make_endpoint(project, name=f"E{n}", target=target.url(f"/e/{n}"), **fields)
            for n in range(count)
        ]

    return make

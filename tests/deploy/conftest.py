"""The deploy test's stack: a fresh clone, a fresh database, a Redis of its own, and the
Procfile's processes on them, all torn down after the test."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.stack import (
    Deployment,
    fresh_clone,
    fresh_database,
    production_environment,
)
from tests.faults.processes import RedisServer


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    redis_server = RedisServer(tmp_path)
    try:
        with fresh_clone() as clone, fresh_database() as database_url:
            # The one writable place, outside the code, as STATE_DIR says.
            state = clone.parent / "state"
            state.mkdir()
            env = production_environment(state, database_url, redis_server.url())
            deployed = Deployment(clone, tmp_path, env)
            try:
                yield deployed
            finally:
                deployed.stop_all()
                deployed.print_logs()
    finally:
        redis_server.kill()

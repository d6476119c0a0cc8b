"""The product deployed from a fresh clone the way the README's Operations section says
(the Procfile's release, web, worker and beat, DEBUG off, PostgreSQL and Redis), then used
over HTTP: it checks an endpoint on schedule, opens an incident and calls a webhook when the
endpoint goes down, and carries on without losing or doubling a check when the worker is
killed with SIGKILL and started again."""

import itertools
import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from tests.alerts.receiver import Receiver
from tests.deploy.stack import Api, Deployment, wait_until
from tests.faults.targets import CountingTarget

INTERVAL = 5


@pytest.fixture
def target() -> Iterator[CountingTarget]:
    peer = CountingTarget()
    try:
        yield peer
    finally:
        peer.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    peer = Receiver()
    try:
        yield peer
    finally:
        peer.stop()


def slots(deployment: Deployment, endpoint_id: str) -> list[datetime]:
    """The slots the endpoint's stored checks filled, oldest first (none can repeat: the
    database holds one check per endpoint and slot, so a repeat would fail to store)."""
    with psycopg.connect(deployment.env["DATABASE_URL"]) as connection:
        rows = connection.execute(
            "SELECT scheduled_for FROM monitoring_checkresult WHERE endpoint_id = %s"
            " ORDER BY scheduled_for",
            [endpoint_id],
        ).fetchall()
    return [row[0] for row in rows]


def start(deployment: Deployment) -> Api:
    """The release step, then web, worker and beat, each waited for."""
    # The processes run the clone's code and cannot write to it.
    imported = deployment.shell("python -c 'import healthmon; print(healthmon.__file__)'")
    assert Path(imported.strip()).is_relative_to(deployment.clone)
    assert "read-only" in deployment.shell("touch Procfile 2>&1 || echo read-only")
    deployment.run("release")
    for name in ("web", "worker", "beat"):
        deployment.start(name)
    api = Api(int(deployment.env["PORT"]))
    wait_until(api.answers, timeout=30)
    wait_until(lambda: " ready." in deployment.log("worker"), timeout=30)
    wait_until(lambda: "beat: Starting" in deployment.log("beat"), timeout=30)
    return api


def test_the_readme_deployment_checks_alerts_and_survives_a_killed_worker(
    deployment, target, receiver
):
    api = start(deployment)
    time.sleep(2)  # beat and web die at once when a path they write is missing
    assert [name for name in ("web", "worker", "beat") if not deployment.alive(name)] == []

    account = api.post(
        "/api/v1/auth/register",
        {"email": "ops@example.com", "password": "a-long-pass-7Qx!", "organization_name": "Ops"},
    )
    api.token = account["token"]
    endpoint = api.post(
        "/api/v1/endpoints",
        {
            "project": account["project"]["id"],
            "name": "Peer",
            "type": "http",
            "target": target.url("/health"),
            "interval_seconds": INTERVAL,
        },
    )
    checks = f"/api/v1/endpoints/{endpoint['id']}/checks?page_size=500"
    wait_until(lambda: api.get(checks)["count"] >= 2, timeout=30)
    assert all(check["ok"] for check in api.get(checks)["results"])
    assert target.hits["/health"] >= 2

    api.post(
        "/api/v1/notification-channels",
        {"name": "Ops hook", "kind": "webhook", "config": {"url": receiver.url}},
    )
    target.stop()
    wait_until(lambda: api.get("/api/v1/incidents?state=open")["count"] == 1, timeout=30)
    wait_until(lambda: receiver.requests, timeout=30)
    delivered = json.loads(receiver.requests[0].body)
    assert (delivered["event"], delivered["endpoint"]["id"]) == ("incident.opened", endpoint["id"])
    assert receiver.requests[0].headers["x-healthmon-signature"].startswith("sha256=")

    # Kill the worker (and its pool) just after a check landed, as a crashed machine would,
    # and start it again at once.
    stored = api.get(checks)["count"]
    wait_until(lambda: api.get(checks)["count"] > stored, timeout=3 * INTERVAL)
    deployment.kill("worker")
    killed = slots(deployment, endpoint["id"])[-1]
    deployment.start("worker")
    wait_until(
        lambda: len([s for s in slots(deployment, endpoint["id"]) if s > killed]) >= 3,
        timeout=40,
    )

    filled = slots(deployment, endpoint["id"])
    gaps = [later - earlier for earlier, later in itertools.pairwise(filled)]
    every = timedelta(seconds=INTERVAL)
    assert len(set(filled)) == len(filled)
    assert all(gap >= every for gap in gaps), gaps  # nothing doubled
    # Nothing lost: one slot follows the other, but for the one the outage skipped (an
    # endpoint that fell behind restarts at a random point of its next interval).
    irregular = [(a, b) for a, b in itertools.pairwise(filled) if b - a != every]
    assert len(irregular) <= 1, irregular
    assert all(a >= killed for a, _ in irregular), (killed, irregular)
    assert api.get("/api/v1/incidents?state=open")["count"] == 1

    # A check someone asked for: the worker's lines for it carry the id of that request.
    asked = api.post(
        "/api/v1/endpoints",
        {
            "project": account["project"]["id"],
            "name": "Asked",
            "type": "http",
            "target": target.url("/asked"),
            "interval_seconds": 3600,
        },
    )
    status, _ = api.call(
        "POST", f"/api/v1/endpoints/{asked['id']}/check-now", headers={"X-Request-ID": "ask-1"}
    )
    assert status == 202

    def traced() -> list[dict]:
        lines = deployment.log("worker").splitlines()
        found = [json.loads(line) for line in lines if line.startswith("{") and '"ask-1"' in line]
        return [line for line in found if line.get("request_id") == "ask-1"]

    wait_until(traced, timeout=30)
    assert {line["event"] for line in traced()} >= {"check_failed"}
    # The check ran under that id; the alert its failure raised may carry it on too, and
    # nothing else does.
    tasks = {line["task"] for line in traced()}
    assert "pipeline.tasks.run_checks" in tasks
    assert tasks <= {"pipeline.tasks.run_checks", "alerts.tasks.deliver"}, tasks

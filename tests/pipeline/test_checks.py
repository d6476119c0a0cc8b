"""The check pipeline: its stages run in order inside one transaction, and the task the
dispatcher queues by name is the pipeline's."""

from datetime import UTC, datetime

import pytest
from django.db import connection

from monitoring import scheduler
from monitoring.checks import CheckOutcome
from monitoring.models import Incident
from monitoring.probes import ProbeResult
from pipeline import checks as pipeline
from pipeline.tasks import run_checks

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
STAGES = [
    "checks_store",
    "rollups_add",
    "certificates_advance",
    "incidents_advance",
    "notifications_queue",
    "certificate_notifications_queue",
]


@pytest.mark.django_db(transaction=True)
def test_the_stages_run_in_order_inside_one_transaction(cast, make_endpoint, monkeypatch):
    endpoint = make_endpoint(cast.project, failure_threshold=1)
    seen = []

    def spy(name, stage):
        def run(**kwargs):
            seen.append((name, connection.in_atomic_block, kwargs))
            return stage(**kwargs)

        return run

    for name in STAGES:
        monkeypatch.setattr(pipeline, name, spy(name, getattr(pipeline, name)))
    failed = ProbeResult(ok=False, response_time_ms=3.0, error="connection refused")

    stored = pipeline.checks_record(outcomes=[CheckOutcome(endpoint.pk, T0, T0, failed)])

    assert stored == 1
    assert [(name, atomic) for name, atomic, _ in seen] == [(name, True) for name in STAGES]
    notified = next(kwargs for name, _, kwargs in seen if name == "notifications_queue")
    assert notified["opened"] == [Incident.objects.get()]
    assert notified["resolved"] == []
    assert list(notified["endpoints"]) == [endpoint.pk]


def test_an_empty_batch_runs_no_stage(db, monkeypatch):
    for name in STAGES:
        monkeypatch.setattr(pipeline, name, lambda **kwargs: pytest.fail("a stage ran"))

    assert pipeline.checks_record(outcomes=[]) == 0


def test_the_dispatcher_queues_the_pipelines_task_by_name(monkeypatch):
    queued = []
    monkeypatch.setattr(run_checks, "apply_async", lambda **call: queued.append(call))
    items = [["00000000-0000-0000-0000-000000000001", T0.isoformat()]]

    scheduler.send_batch(items)
    scheduler.send_batch(items, slow=True)

    assert run_checks.name == scheduler.RUN_CHECKS
    expires = scheduler.BATCH_EXPIRES_SECONDS
    shown = "[1 items]"  # the batch's size, not its ids, in the message's headers
    assert queued == [
        {"args": (items,), "argsrepr": shown, "expires": expires},
        {"args": (items,), "argsrepr": shown, "expires": expires, "queue": scheduler.SLOW_QUEUE},
    ]

"""/readyz with a real broker that stops and comes back, and /metrics counting what a run of
the check pipeline stored, across processes (prometheus-client's multiprocess mode).

Counters are shared by every process of the checkout (and live on between runs), so these
tests compare what changed during the test; they sit in the services tier, which runs in one
process, so no other test stores checks meanwhile.
"""

import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from alerts.delivery import deliveries_dispatch
from alerts.models import Delivery
from monitoring import scheduler
from monitoring.models import CheckResult, Endpoint
from pipeline.checks import checks_run
from pipeline.heartbeats import heartbeat_deadlines_run
from tests.alerts.receiver import Receiver, webhook
from tests.faults.processes import ROOT


def _samples(client: Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def _changed(before, after, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of `name` that moved between two scrapes, by labels."""
    return {
        labels: value - before.get((sample, labels), 0.0)
        for (sample, labels), value in after.items()
        if sample == name and value != before.get((sample, labels), 0.0)
    }


@pytest.mark.django_db
def test_readyz_names_the_broker_while_redis_is_stopped_and_recovers(settings, redis_server):
    settings.CELERY_BROKER_URL = redis_server.url()
    client = Client()
    scheduler.dispatch(now=timezone.now(), batch_size=200)

    before = client.get("/readyz")
    redis_server.kill()
    started = time.monotonic()
    stopped = client.get("/readyz")
    took = time.monotonic() - started
    redis_server.start()
    after = client.get("/readyz")

    assert before.status_code == 200
    assert stopped.status_code == 503
    assert stopped.json()["failing"] == ["broker"]
    assert stopped.json()["checks"]["broker"].startswith("unreachable")
    assert took < 1  # a refused connection is not tried again
    assert str(redis_server.port) not in stopped.content.decode()
    assert after.status_code == 200
    assert after.json()["checks"] == {"database": "ok", "broker": "ok", "dispatcher": "ok"}


@pytest.mark.django_db(transaction=True)  # counted on commit, as in a worker
def test_metrics_count_the_checks_a_run_stored(settings, cast, make_endpoint, http_peer):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    client = Client()
    up = [
        make_endpoint(cast.project, name=f"up{n}", target=http_peer.url("/health"))
        for n in range(3)
    ]
    down = [
        make_endpoint(cast.project, name=f"down{n}", target=http_peer.url("/status/503"))
        for n in range(2)
    ]
    slot = timezone.now()
    before = _samples(client)

    checks_run(slots=[(endpoint.pk, slot) for endpoint in up + down])
    checks_run(slots=[(endpoint.pk, slot) for endpoint in up])  # delivered twice: stores nothing
    after = _samples(client)

    stored = Counter(
        ("http", "ok" if ok else "failed")
        for ok in CheckResult.objects.filter(scheduled_for=slot).values_list("ok", flat=True)
    )
    counted = _changed(before, after, "healthmon_checks_total")
    assert stored == {("http", "ok"): 3, ("http", "failed"): 2}
    assert counted == {
        (("result", "failed"), ("type", "http")): 2,
        (("result", "ok"), ("type", "http")): 3,
    }
    durations = _changed(before, after, "healthmon_check_duration_seconds_count")
    assert durations == {(("type", "http"),): 5}


@pytest.mark.django_db
def test_metrics_count_untimed_heartbeat_checks_but_time_only_runs(
    cast, make_endpoint, django_capture_on_commit_callbacks
):
    heartbeat = make_endpoint(cast.project, type="heartbeat", target="")
    client = Client()
    before = _samples(client)

    with django_capture_on_commit_callbacks(execute=True):
        assert client.get(f"/ping/{heartbeat.ping_key}").content == b"OK"  # no start: untimed
        client.get(f"/ping/{heartbeat.ping_key}/start")
        client.get(f"/ping/{heartbeat.ping_key}")
        # An up heartbeat's pings are stored, then made checks by the deadline loop.
        heartbeat_deadlines_run(now=timezone.now())
    after = _samples(client)

    assert _changed(before, after, "healthmon_checks_total") == {
        (("result", "ok"), ("type", "heartbeat")): 2
    }
    durations = _changed(before, after, "healthmon_check_duration_seconds_count")
    assert durations == {(("type", "heartbeat"),): 1}


@pytest.mark.django_db
def test_metrics_sum_what_every_process_recorded(cast):
    client = Client()
    before = _samples(client)

    record = (
        "import django; django.setup(); from healthmon import metrics; "
        "metrics.checks_observed(kinds=[('tcp', False, 12.0)] * 4); "
        "metrics.delivery_observed(outcome='delivered')"
    )
    subprocess.run([sys.executable, "-c", record], cwd=ROOT, check=True)  # noqa: S603
    after = _samples(client)

    assert _changed(before, after, "healthmon_checks_total") == {
        (("result", "failed"), ("type", "tcp")): 4
    }
    assert _changed(before, after, "healthmon_deliveries_total") == {(("outcome", "delivered"),): 1}


@pytest.mark.django_db
def test_metrics_show_what_a_dispatcher_tick_claimed_and_how_late(cast, make_endpoint):
    now = timezone.now()
    due = [make_endpoint(cast.project, name=f"due{n}").pk for n in range(3)]
    Endpoint.objects.filter(pk__in=due).update(next_check_at=now - timedelta(seconds=7))
    client = Client()
    before = _samples(client)

    scheduler.dispatch(now=now, batch_size=200)
    after = _samples(client)

    assert _changed(before, after, "healthmon_dispatcher_claimed_per_tick_count") == {(): 1}
    assert _changed(before, after, "healthmon_dispatcher_claimed_per_tick_sum") == {(): 3}
    assert after[("healthmon_dispatcher_lag_seconds", ())] == pytest.approx(7, abs=0.01)


@pytest.mark.django_db
def test_metrics_count_deliveries_by_outcome(
    settings, cast, make_endpoint, record, django_capture_on_commit_callbacks
):
    settings.PROBE_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.NOTIFY_RETRY_BASE_SECONDS = 30
    endpoint = make_endpoint(cast.project, name="Checkout API", failure_threshold=1)
    client = Client()
    peer = Receiver((503, 200))
    try:
        webhook(cast, peer.url)
        before = _samples(client)
        with django_capture_on_commit_callbacks(execute=True):
            record(endpoint, [(timezone.now(), False, 20.0)])
        with django_capture_on_commit_callbacks(execute=True):
            deliveries_dispatch(now=timezone.now() + timedelta(seconds=31))
        after = _samples(client)
    finally:
        peer.stop()

    assert Delivery.objects.get().status == "delivered"
    assert _changed(before, after, "healthmon_deliveries_total") == {
        (("outcome", "retry"),): 1,
        (("outcome", "delivered"),): 1,
    }

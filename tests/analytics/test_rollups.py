"""Rollups kept on ingest equal a recomputation from the raw checks, in every tier."""

import io
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import call_command

from analytics import histogram
from analytics.models import TIERS, DayRollup, FiveMinuteRollup, HourRollup
from analytics.services import rollups_rebuild
from monitoring.models import CheckResult

T0 = datetime(2026, 11, 1, 22, 0, tzinfo=UTC)  # the data crosses two midnights


def seeded(seed: int) -> random.Random:
    """Reproducible test data."""
    return random.Random(seed)  # noqa: S311 - not for secrets


def stored_rollups():
    """Every rollup row, as comparable tuples keyed by tier, endpoint and bucket."""
    rows = {}
    for tier in TIERS:
        for row in tier.objects.values():
            key = (tier.__name__, row["endpoint_id"], row["bucket"])
            rows[key] = (
                row["count"],
                row["failures"],
                round(row["sum_ms"], 6),
                row["min_ms"],
                row["max_ms"],
                tuple(row[name] for name in histogram.FIELDS),
            )
    return rows


def recomputed_from_raw():
    """The same rows computed here, straight from the stored checks."""
    widths = {tier.__name__: int(tier.width.total_seconds()) for tier in TIERS}
    groups = defaultdict(list)
    for check in CheckResult.objects.all():
        stamp = int(check.checked_at.timestamp())
        for name, width in widths.items():
            bucket = datetime.fromtimestamp(stamp - stamp % width, UTC)
            groups[(name, check.endpoint_id, bucket)].append(check)
    rows = {}
    for key, checks in groups.items():
        times = [c.response_time_ms for c in checks if c.ok]
        counts = [0] * histogram.SIZE
        for ms in times:
            counts[histogram.bucket_of(ms)] += 1
        rows[key] = (
            len(checks),
            sum(not c.ok for c in checks),
            round(sum(times), 6),
            min(times, default=None),
            max(times, default=None),
            tuple(counts),
        )
    return rows


@pytest.fixture
def endpoints(cast, make_endpoint):
    with time_machine.travel(T0 - timedelta(days=1), tick=False):
        return [make_endpoint(cast.project, name=f"E{i}") for i in range(3)]


def random_checks(rng, count):
    checks = []
    for _ in range(count):
        at = T0 + timedelta(seconds=rng.randrange(0, 3 * 86_400), microseconds=rng.randrange(10**6))
        ok = rng.random() > 0.15
        ms = round(rng.lognormvariate(4, 1.2), 3) if rng.random() > 0.01 else 0.0
        checks.append((at, ok, ms, "" if ok else rng.choice(["timeout", "HTTP 500"])))
    return checks


def test_incremental_rollups_equal_a_recomputation_from_raw(endpoints, record):
    rng = seeded(7)
    batches = []
    for endpoint in endpoints:
        checks = random_checks(rng, 900)
        rng.shuffle(checks)  # results arrive out of order, late ones too
        batches += [(endpoint, checks[i : i + 37]) for i in range(0, len(checks), 37)]
    rng.shuffle(batches)

    for endpoint, checks in batches:
        record(endpoint, checks)
    endpoint, checks = batches[0]
    assert record(endpoint, checks) == 0  # a redelivered batch adds nothing

    incremental = stored_rollups()
    assert incremental == recomputed_from_raw()
    assert {key[0] for key in incremental} == {"FiveMinuteRollup", "HourRollup", "DayRollup"}
    assert sum(v[0] for k, v in incremental.items() if k[0] == "DayRollup") == 2_700


def test_rebuild_reproduces_the_incremental_rows(endpoints, record):
    rng = seeded(11)
    for endpoint in endpoints:
        record(endpoint, random_checks(rng, 400))
    incremental = stored_rollups()
    HourRollup.objects.all().delete()
    FiveMinuteRollup.objects.filter(endpoint=endpoints[0]).update(count=999)

    with time_machine.travel(T0 + timedelta(days=3), tick=False):
        read = rollups_rebuild(
            endpoint_ids=[e.pk for e in endpoints], start=T0, end=T0 + timedelta(days=3)
        )

    assert read == 1_200
    assert stored_rollups() == incremental


def test_the_rebuild_command_covers_every_endpoint(endpoints, record):
    rng = seeded(5)
    for endpoint in endpoints:
        record(endpoint, random_checks(rng, 50))
    incremental = stored_rollups()
    for tier in TIERS:
        tier.objects.all().delete()

    with time_machine.travel(T0 + timedelta(days=4), tick=False):
        call_command("rebuild_rollups", "--days", "5", stdout=io.StringIO())

    assert stored_rollups() == incremental


def test_a_failure_adds_to_the_count_but_not_to_the_latency(endpoints, record):
    endpoint = endpoints[0]
    record(endpoint, [(T0, False, 10_000.0, "timeout"), (T0 + timedelta(seconds=30), True, 42.0)])

    row = DayRollup.objects.get(endpoint=endpoint)

    assert (row.count, row.failures) == (2, 1)
    assert (row.sum_ms, row.min_ms, row.max_ms) == (42.0, 42.0, 42.0)
    assert sum(getattr(row, name) for name in histogram.FIELDS) == 1


def test_only_failures_leave_the_latency_empty(endpoints, record):
    endpoint = endpoints[0]
    record(endpoint, [(T0, False, 5.0, "refused")])
    record(endpoint, [(T0 + timedelta(seconds=30), False, 6.0, "refused")])

    row = FiveMinuteRollup.objects.get(endpoint=endpoint)

    assert (row.count, row.failures, row.min_ms, row.max_ms) == (2, 2, None, None)
    record(endpoint, [(T0 + timedelta(seconds=60), True, 7.0)])
    row.refresh_from_db()
    assert (row.min_ms, row.max_ms) == (7.0, 7.0)


@pytest.mark.parametrize(
    ("ms", "index"),
    [(0.0, 0), (0.49, 0), (0.5, 1), (0.7, 1), (0.7072, 2), (1.0, 3), (65_536.0, 35), (1e9, 35)],
)
def test_histogram_buckets(ms, index):
    assert histogram.bucket_of(ms) == index
    low, high = histogram.bounds(index)
    assert low <= ms < high


def test_a_rebuild_never_touches_days_past_the_raw_retention(endpoints, record, settings):
    record(endpoints[0], [(T0, True, 5.0), (T0 + timedelta(days=1), True, 6.0)])
    CheckResult.objects.filter(checked_at__lt=T0 + timedelta(hours=2)).delete()  # retention ran
    settings.RAW_RETENTION_DAYS = 14
    before = stored_rollups()

    with time_machine.travel(T0 + timedelta(days=14, hours=12), tick=False):
        rollups_rebuild(endpoint_ids=[endpoints[0].pk], start=T0, end=T0 + timedelta(days=2))

    assert stored_rollups() == before  # the first day's rows are all that is left of it

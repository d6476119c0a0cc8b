"""The fold (`analytics.fold`): ingest writes the five-minute tier, a beat task folds it into
the hourly and daily tiers behind a watermark, and every read adds the rows not folded yet.
The rows end up as a recomputation from raw checks makes them, and no read ever differs
from what it answers with every tier complete."""

import threading
from datetime import datetime, timedelta

import pytest
import time_machine
from django.db import OperationalError, connection, connections, transaction

from analytics import fold, selectors
from analytics.latency import Latency
from analytics.models import TIERS, DayRollup, FiveMinuteRollup, HourRollup, RollupFold
from analytics.selectors import bucketed
from analytics.services import FOLD_STEP, retention_run, rollups_fold, rollups_rebuild
from analytics.windows import floor
from healthmon.intervals import Window
from statuspages.selectors import _rollup_days
from tests.analytics.conftest import figures
from tests.analytics.test_rollups import (
    T0,
    random_checks,
    recomputed_from_raw,
    seeded,
    stored_rollups,
)

FIVE = timedelta(minutes=5)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
URL = "/api/v1/analytics/"


@pytest.fixture
def endpoints(cast, make_endpoint):
    with time_machine.travel(T0 - DAY, tick=False):
        return [make_endpoint(cast.project, name=f"E{i}") for i in range(3)]


def fold_until(moment: datetime) -> None:
    """Run the fold at `moment` until its watermark stops (it folds an hour a run)."""
    while True:
        before = RollupFold.objects.values_list("folded_to", flat=True).first()
        rollups_fold(now=moment)
        if RollupFold.objects.values_list("folded_to", flat=True).first() == before:
            return


def day_counts(endpoint) -> list[tuple[datetime, int]]:
    return sorted(DayRollup.objects.filter(endpoint=endpoint).values_list("bucket", "count"))


def watermark() -> datetime:
    return RollupFold.objects.get().folded_to


def record_in_order(endpoints, record, rng, *, fold_every: int, late_every: int):
    """Three days of checks stored in time order in batches, the fold run as beat would
    between them; every `late_every`th batch is held back and stored after its buckets
    were folded (a late batch)."""
    batches = []
    for endpoint in endpoints:
        checks = sorted(random_checks(rng, 600))
        batches += [(checks[i][0], endpoint, checks[i : i + 10]) for i in range(0, 600, 10)]
    batches.sort(key=lambda batch: batch[0])
    held = []
    for n, (at, endpoint, checks) in enumerate(batches):
        if n % late_every == 0:
            held.append((endpoint, checks))
            continue
        record(endpoint, checks)
        if n % fold_every == 0:
            rollups_fold(now=at)
    for endpoint, checks in held:
        record(endpoint, checks)


def test_the_first_fold_only_sets_the_watermark_two_buckets_ahead(db):
    now = T0 + timedelta(minutes=7, seconds=3)
    assert rollups_fold(now=now) == 0
    assert watermark() == T0 + 3 * FIVE  # the bucket after the next one
    assert rollups_fold(now=now + HOUR) == 0  # nothing stored: nothing folded
    assert watermark() == T0 + HOUR + FIVE  # a minute behind now, on a bucket's start


def test_a_batch_before_the_watermark_adds_to_every_tier_after_it_to_five_minutes(
    endpoints, record
):
    rollups_fold(now=T0 - HOUR)
    fold_until(T0 + 2 * HOUR)
    assert watermark() == T0 + 2 * HOUR - FIVE
    endpoint = endpoints[0]

    record(endpoint, [(T0 + HOUR, True, 40.0)])  # late: its bucket was folded
    record(endpoint, [(T0 + 2 * HOUR + timedelta(seconds=10), True, 60.0)])  # not folded yet

    assert FiveMinuteRollup.objects.filter(endpoint=endpoint).count() == 2
    assert [(r.bucket, r.count) for r in HourRollup.objects.filter(endpoint=endpoint)] == [
        (T0 + HOUR, 1)
    ]
    assert day_counts(endpoint) == [(T0.replace(hour=0), 1)]

    rollups_fold(now=T0 + 2 * HOUR + 2 * FIVE)

    assert sorted((r.bucket, r.count) for r in HourRollup.objects.filter(endpoint=endpoint)) == [
        (T0 + HOUR, 1),
        (T0 + 2 * HOUR, 1),
    ]
    assert day_counts(endpoint) == [(T0.replace(hour=0), 1), (T0.replace(hour=0) + DAY, 1)]


def test_folded_rows_equal_a_recomputation_from_raw_checks(endpoints, record):
    rollups_fold(now=T0 - HOUR)
    record_in_order(endpoints, record, seeded(3), fold_every=7, late_every=9)
    now = watermark()
    assert T0 < now < T0 + 3 * DAY  # the fold is behind the last checks

    # Before the watermark the coarser rows are complete; after it they hold nothing.
    raw = recomputed_from_raw()
    stored = stored_rollups()
    five = {k: v for k, v in raw.items() if k[0] == "FiveMinuteRollup"}
    assert {k: v for k, v in stored.items() if k[0] == "FiveMinuteRollup"} == five
    hours = {k: v for k, v in stored.items() if k[0] == "HourRollup"}
    assert all(bucket < now for _, _, bucket in hours)
    complete = {k: v for k, v in raw.items() if k[0] == "HourRollup" and k[2] + HOUR <= now}
    assert {k: v for k, v in hours.items() if k[2] + HOUR <= now} == complete

    fold_until(T0 + 4 * DAY)

    assert watermark() == floor(T0 + 4 * DAY - timedelta(minutes=1), FIVE)
    assert stored_rollups() == recomputed_from_raw()


def test_a_stalled_fold_catches_up_an_hour_a_run(endpoints, record):
    rollups_fold(now=T0 - HOUR)
    start = watermark()
    record(endpoints[0], [(T0 + timedelta(hours=h), True, 10.0) for h in range(5)])

    rollups_fold(now=T0 + DAY)

    assert watermark() == start + FOLD_STEP
    fold_until(T0 + DAY)
    assert HourRollup.objects.filter(endpoint=endpoints[0]).count() == 5


def comparable(found):
    """Read figures as comparable values: float sums rounded (the fold adds them up in
    another order than a recomputation)."""
    if isinstance(found, Latency):
        return (
            found.count,
            found.failures,
            found.timed,
            round(found.sum_ms, 6),
            found.min_ms,
            found.max_ms,
            tuple(found.hist),
        )
    if isinstance(found, dict):
        return {key: comparable(value) for key, value in found.items()}
    if isinstance(found, list | tuple):
        return [comparable(value) for value in found]
    return found


def reads(endpoints, now):
    """What the reports read of the rollups, through every reader of a coarser tier."""
    owners = {e.pk: e.pk for e in endpoints}
    grouped = dict.fromkeys(owners, endpoints[0].project_id)
    windows = [Window(now - period, now) for period in (HOUR, DAY, 7 * DAY, 30 * DAY)]
    figures_ = selectors.rollup_figures(owners, windows, now, percentiles=1)
    series = {
        tier.__name__: (
            selectors.series(tier, owners, Window(now - 3 * DAY, now)),
            selectors.series(tier, grouped, Window(now - 3 * DAY, now), histograms=False),
        )
        for tier in TIERS
    }
    days = [(now - DAY * n).date() for n in range(5, -1, -1)]

    class Row:
        def __init__(self, endpoint_id):
            self.endpoint_id = endpoint_id

    bars = _rollup_days([Row(pk) for pk in owners], days, now)
    return comparable([figures_, series, bars])


def test_reads_add_the_five_minute_rows_not_folded_yet(endpoints, record, api, cast):
    rollups_fold(now=T0 - HOUR)
    record_in_order(endpoints, record, seeded(5), fold_every=11, late_every=13)
    now = T0 + 3 * DAY + 20 * timedelta(minutes=1)
    # The fold stalled hours ago: tails of hours, reaching into an earlier day.
    rollups_fold(now=T0 + 2 * DAY + 2 * HOUR)
    assert watermark() < T0 + 3 * DAY - 12 * HOUR

    with time_machine.travel(now, tick=False):
        folded = reads(endpoints, now)
        api.as_user(cast.owner)
        pages = [
            figures(api.get(URL + route, {"period": period}))
            for route in ("summary", "uptime", "sla")
            for period in ("24h", "7d", "30d")
        ]
        RollupFold.objects.all().delete()  # no fold: every tier complete, as rebuilt
        rollups_rebuild(endpoint_ids=[e.pk for e in endpoints], start=T0, end=now)
        complete = reads(endpoints, now)
        again = [
            figures(api.get(URL + route, {"period": period}))
            for route in ("summary", "uptime", "sla")
            for period in ("24h", "7d", "30d")
        ]

    assert sum(stats[0] for stats in folded[0][2].values()) == 1_800
    assert folded == complete
    assert pages == again


@pytest.mark.postgres("the per-endpoint series' prepared statement")
@pytest.mark.parametrize("tier", TIERS, ids=lambda tier: tier.__name__)
@pytest.mark.parametrize("histograms", [True, False], ids=["histograms", "plain"])
def test_the_series_statement_reads_the_rows_the_orm_reads(endpoints, record, tier, histograms):
    rollups_fold(now=T0 - HOUR)
    record_in_order(endpoints, record, seeded(7), fold_every=11, late_every=13)
    rollups_fold(now=T0 + 2 * DAY + 2 * HOUR)  # stalled: tails of hours, into a day
    owners = {e.pk: e.pk for e in endpoints}
    reader, _ = bucketed._bucket_reader(None if tier is TIERS[0] else tier.width)
    ranges = [(T0, T0 + 3 * DAY), (T0 + DAY + 7 * HOUR, T0 + 2 * DAY + 5 * HOUR)]
    ranges += [(T0 + 2 * DAY, T0 + 3 * DAY + HOUR), (T0 - DAY, T0)]  # past, and none
    for start, end in ranges:
        within = Window(floor(start, tier.width), end)
        made = bucketed._series_rows(tier, list(owners), within, histograms, connection)
        orm = bucketed._orm_rows(tier, owners, within, histograms, reader)

        assert sorted(map(tuple, made)) == sorted(map(tuple, orm))
        assert made or start == T0 - DAY


def test_a_rebuild_keeps_the_coarser_rows_to_the_watermark(endpoints, record):
    rollups_fold(now=T0 - HOUR)
    record_in_order(endpoints, record, seeded(9), fold_every=5, late_every=17)
    before = stored_rollups()

    with time_machine.travel(T0 + 3 * DAY, tick=False):
        rollups_rebuild(endpoint_ids=[e.pk for e in endpoints], start=T0, end=T0 + 3 * DAY)

    assert stored_rollups() == before


def test_retention_keeps_five_minute_rows_not_folded_yet(endpoints, record, settings):
    rollups_fold(now=T0 - HOUR)
    record(endpoints[0], [(T0 + timedelta(hours=h), True, 10.0) for h in range(3)])
    settings.ROLLUP_5M_RETENTION_DAYS = 1

    retention_run(now=T0 + 30 * DAY)  # the fold never ran since

    assert FiveMinuteRollup.objects.count() == 3
    fold_until(T0 + 3 * HOUR)
    retention_run(now=T0 + 30 * DAY)
    assert FiveMinuteRollup.objects.count() == 0
    assert HourRollup.objects.count() == 3


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the advisory lock")
@pytest.mark.django_db(transaction=True)
def test_the_fold_waits_for_batches_in_flight():
    """A batch holds its share of the fold's lock to its commit: a fold meanwhile waits
    (here past a short lock timeout), so it never folds a bucket a batch still writes by
    the watermark it read."""
    with time_machine.travel(T0, tick=False):
        rollups_fold(now=T0)
    holding, release = threading.Event(), threading.Event()

    def batch() -> None:
        try:
            with transaction.atomic():
                fold.batch_lock()
                holding.set()
                release.wait(10)
        finally:
            connections.close_all()

    thread = threading.Thread(target=batch)
    thread.start()
    try:
        assert holding.wait(10)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '200ms'")
            with pytest.raises(OperationalError, match="lock timeout"):
                rollups_fold(now=T0 + HOUR)
    finally:
        release.set()
        thread.join()
    assert watermark() == T0 + 2 * FIVE
    assert rollups_fold(now=T0 + HOUR) == 0  # nothing stored; the lock is free again
    assert watermark() == T0 + HOUR - FIVE


def test_the_fold_runs_every_minute_on_beat(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["fold-rollups"]
    assert entry["task"] == "analytics.tasks.fold_rollups"
    assert entry["schedule"] == 60.0

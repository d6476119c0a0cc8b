"""How a range is tiled by rollup tiers: every 5-minute slice once, coarsest rows first."""

import random
from datetime import UTC, datetime, timedelta

import pytest

from analytics.models import DayRollup, FiveMinuteRollup, HourRollup
from analytics.windows import buckets, ceil, floor, tiles
from healthmon.intervals import Window

NOW = datetime(2026, 11, 21, 10, 37, 12, tzinfo=UTC)
FIVE = timedelta(minutes=5)


@pytest.fixture(autouse=True)
def _keep_every_tier(settings):
    """Retention out of the way, but where a test brings it back."""
    settings.ROLLUP_5M_RETENTION_DAYS = 3660
    settings.ROLLUP_1H_RETENTION_DAYS = 3660


def covered(spans):
    """The 5-minute slices each span's rows stand for, with repeats kept."""
    slices = []
    for tier, start, end in spans:
        bucket = start
        while bucket < end:
            slices += [bucket + i * FIVE for i in range(int(tier.width / FIVE))]
            bucket += tier.width
    return slices


def seeded(seed: int) -> random.Random:
    return random.Random(seed)  # noqa: S311 - reproducible test data


@pytest.mark.parametrize("seed", range(200))
def test_a_past_range_is_covered_once_from_its_first_boundary(seed):
    rng = seeded(seed)
    start = NOW - timedelta(days=60) + timedelta(seconds=rng.randrange(50 * 86_400))
    end = start + timedelta(seconds=rng.randrange(60, 9 * 86_400))
    window = Window(start, min(end, NOW - timedelta(days=1)))
    if window.end <= window.start:
        return
    step = FIVE if window.seconds <= 2 * 86_400 else timedelta(hours=1)

    slices = covered(tiles(window, NOW))

    assert len(slices) == len(set(slices))
    first = ceil(window.start, step)
    expected = []
    moment = first
    while moment < window.end:
        expected.append(moment)
        moment += FIVE
    assert sorted(slices) == expected


def test_a_live_30_day_range_reads_few_rows():
    spans = tiles(Window(NOW - timedelta(days=30), NOW), NOW)

    rows = sum(int((end - start) / tier.width) for tier, start, end in spans)
    assert {tier for tier, _, _ in spans} == {DayRollup}  # a month counts from a day boundary
    assert rows == 30
    tier, _, end = spans[-1]
    assert (tier, end) == (DayRollup, ceil(NOW, timedelta(days=1)))  # today's row, whole


def test_a_live_day_ends_with_the_current_day_row():
    spans = tiles(Window(NOW - timedelta(hours=24), NOW), NOW)

    assert spans[0][0] is FiveMinuteRollup
    assert spans[-1][0] is DayRollup
    rows = sum(int((end - start) / tier.width) for tier, start, end in spans)
    assert rows <= 11 + 23 + 1


def test_a_range_shorter_than_a_bucket_reads_five_minute_rows():
    start = datetime(2026, 11, 1, 12, 1, tzinfo=UTC)
    assert tiles(Window(start, start + timedelta(minutes=9)), NOW) == [
        (FiveMinuteRollup, start + timedelta(minutes=4), start + timedelta(minutes=9))
    ]


@pytest.mark.parametrize("seed", range(200))
def test_past_retention_edges_widen_without_counting_anything_twice(settings, seed):
    settings.ROLLUP_5M_RETENTION_DAYS = 14
    settings.ROLLUP_1H_RETENTION_DAYS = 90
    rng = seeded(seed)
    start = NOW - timedelta(days=120) + timedelta(seconds=rng.randrange(115 * 86_400))
    window = Window(start, start + timedelta(seconds=rng.randrange(60, 9 * 86_400)))
    if window.end > NOW:
        return

    spans = tiles(window, NOW)
    slices = covered(spans)

    assert len(slices) == len(set(slices))
    for tier, span_start, _ in spans:  # no span reads rows retention has deleted
        if tier is FiveMinuteRollup:
            assert span_start >= NOW - timedelta(days=14)
        if tier is HourRollup:
            assert span_start >= NOW - timedelta(days=90)
    wanted = set(covered(tiles(window, NOW - timedelta(days=365))))  # as if nothing expired
    assert wanted <= set(slices)
    day = timedelta(days=1)
    assert min(slices) >= floor(window.start, day)
    assert max(slices) < ceil(window.end, day)


def test_a_30_hour_range_100_days_ago_reads_the_days_that_hold_it(settings):
    settings.ROLLUP_5M_RETENTION_DAYS = 14
    settings.ROLLUP_1H_RETENTION_DAYS = 90
    start = datetime(2026, 8, 10, 7, 3, tzinfo=UTC)

    spans = tiles(Window(start, start + timedelta(hours=30)), NOW)

    day = datetime(2026, 8, 10, tzinfo=UTC)
    assert spans == [(DayRollup, day, day + timedelta(days=2))]


@pytest.mark.parametrize("seed", range(50))
def test_spreading_intervals_over_buckets_matches_the_plain_sum(seed):
    from analytics.reports.series import _spread

    rng = seeded(seed)
    width = timedelta(minutes=rng.choice([5, 60]))
    window = Window(NOW - timedelta(hours=30), NOW)
    starts = list(buckets(window, width))
    intervals = []
    for _ in range(rng.randrange(0, 8)):
        start = window.start + timedelta(seconds=rng.randrange(0, 30 * 3600))
        intervals.append(
            (start, min(window.end, start + timedelta(seconds=rng.randrange(1, 40_000))))
        )

    spread = _spread(intervals, starts, width)

    for index, bucket in enumerate(starts):
        plain = sum(
            max(0.0, (min(end, bucket + width) - max(start, bucket)).total_seconds())
            for start, end in intervals
        )
        assert spread[index] == pytest.approx(plain, abs=1e-6)

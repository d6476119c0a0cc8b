"""How a range is tiled by rollup tiers: every 5-minute slice once, coarsest rows first."""

import random
from datetime import UTC, datetime, timedelta

import pytest

from analytics.models import DayRollup, FiveMinuteRollup, HourRollup
from analytics.windows import Window, ceil, tiles

NOW = datetime(2026, 11, 21, 10, 37, 12, tzinfo=UTC)
FIVE = timedelta(minutes=5)


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
    assert {tier for tier, _, _ in spans} == {HourRollup, DayRollup}
    assert rows <= 23 + 30
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

"""Interval arithmetic: each operation on hand-picked cases, then all of them against a
second-by-second count on seeded random lists."""

import itertools
import random
from datetime import UTC, datetime, timedelta

import pytest

from healthmon.intervals import Window, clip, intersect, length, lengths, merge, subtract

T0 = datetime(2026, 11, 1, tzinfo=UTC)
SPAN = 600  # seconds the random intervals fall in


def at(second: int) -> datetime:
    return T0 + timedelta(seconds=second)


def iv(*pairs: tuple[int, int]) -> list[tuple[datetime, datetime]]:
    """Intervals from (start, end) seconds after T0."""
    return [(at(start), at(end)) for start, end in pairs]


def test_a_window_knows_its_length_and_the_one_before():
    window = Window(at(100), at(160))

    assert window.seconds == 60
    assert window.previous() == Window(at(40), at(100))


def test_a_window_overlaps_what_shares_time_with_it_not_what_only_touches():
    window = Window(at(10), at(20))

    assert window.overlaps((at(15), at(30)))
    assert window.overlaps((at(0), at(40)))
    assert window.overlaps((at(19), at(20)))
    assert not window.overlaps((at(20), at(30)))
    assert not window.overlaps((at(0), at(10)))


def test_clip_cuts_to_the_window_and_drops_what_lies_outside():
    window = Window(at(10), at(20))

    assert clip(iv((0, 12), (14, 16), (18, 30), (25, 40), (0, 10)), window) == iv(
        (10, 12), (14, 16), (18, 20)
    )
    assert clip([], window) == []


def test_merge_sorts_and_joins_overlapping_and_touching_intervals():
    assert merge(iv((5, 8), (0, 2), (2, 3), (7, 12), (9, 10), (20, 21))) == iv(
        (0, 3), (5, 12), (20, 21)
    )
    assert merge([]) == []


def test_intersect_keeps_the_time_in_both():
    first = iv((0, 10), (20, 30), (40, 50))
    second = iv((5, 25), (28, 45), (60, 70))

    assert intersect(first, second) == iv((5, 10), (20, 25), (28, 30), (40, 45))
    assert intersect(first, []) == []
    assert intersect(iv((0, 10)), iv((10, 20))) == []


def test_subtract_leaves_the_time_outside_every_hole():
    intervals = iv((0, 10), (20, 30), (40, 50))
    holes = iv((2, 4), (8, 22), (25, 26), (45, 60))

    assert subtract(intervals, holes) == iv((0, 2), (4, 8), (22, 25), (26, 30), (40, 45))
    assert subtract(intervals, []) == intervals
    assert subtract(iv((0, 10)), iv((0, 10))) == []


def test_length_adds_seconds_and_lengths_within_windows():
    intervals = iv((0, 10), (20, 30))

    assert length(intervals) == 20
    assert lengths(intervals, [Window(at(5), at(25)), Window(at(40), at(50))]) == [10, 0]
    assert length([]) == 0


def spans(rng: random.Random, count: int) -> list[tuple[datetime, datetime]]:
    """`count` intervals in [0, SPAN) seconds, possibly overlapping, in no order."""
    found = []
    for _ in range(count):
        start = rng.randrange(SPAN)
        found.append((at(start), at(min(SPAN, start + rng.randrange(1, 120)))))
    return found


def seconds(intervals: list[tuple[datetime, datetime]]) -> set[int]:
    """The whole seconds the intervals cover, counted one by one."""
    return {n for n in range(SPAN) if any(s <= at(n) < e for s, e in intervals)}


def well_formed(intervals: list[tuple[datetime, datetime]]) -> bool:
    """Sorted, disjoint, not touching, none empty."""
    return all(s < e for s, e in intervals) and all(
        a[1] < b[0] for a, b in itertools.pairwise(intervals)
    )


@pytest.mark.parametrize("seed", range(20))
def test_every_operation_matches_a_second_by_second_count(seed):
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not secrets
    for _ in range(25):
        first = merge(spans(rng, rng.randint(0, 8)))
        second = merge(spans(rng, rng.randint(0, 8)))
        low = rng.randrange(SPAN)
        window = Window(at(low), at(rng.randrange(low + 1, SPAN + 1)))
        inside = set(range(low, int((window.end - T0).total_seconds())))

        assert well_formed(first)
        assert seconds(clip(first, window)) == seconds(first) & inside
        assert seconds(intersect(first, second)) == seconds(first) & seconds(second)
        assert seconds(subtract(first, second)) == seconds(first) - seconds(second)
        assert length(first) == len(seconds(first))
        assert lengths(first, [window]) == [len(seconds(first) & inside)]
        for result in (clip(first, window), intersect(first, second), subtract(first, second)):
            assert result == sorted(result)
            assert all(s < e for s, e in result)


@pytest.mark.parametrize("seed", range(10))
def test_merge_covers_exactly_what_its_input_covers(seed):
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not secrets
    for _ in range(25):
        raw = spans(rng, rng.randint(0, 12))

        merged = merge(raw)

        assert seconds(merged) == seconds(raw)
        assert well_formed(merged)


@pytest.mark.parametrize("seed", range(10))
def test_lengths_in_several_windows_at_once_are_each_windows_own(seed):
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not secrets
    for _ in range(25):
        raw = spans(rng, rng.randint(0, 12))  # overlapping ones each count
        bounds = [sorted(rng.sample(range(SPAN + 1), 2)) for _ in range(rng.randint(1, 4))]
        windows = [Window(at(low), at(high)) for low, high in bounds]

        found = lengths(raw, windows)

        assert found == [
            sum(len(seconds([interval]) & set(range(low, high))) for interval in raw)
            for low, high in bounds
        ]
        assert found == [lengths(raw, [window])[0] for window in windows]


def test_lengths_add_up_exactly_to_the_microsecond():
    tenths = [(at(n), at(n) + timedelta(milliseconds=100)) for n in range(10)]

    # Ten float tenths of a second add up to 0.9999999999999999.
    assert length(tenths) == 1.0
    assert lengths(tenths, [Window(at(0), at(10)), Window(at(5), at(10))]) == [1.0, 0.5]

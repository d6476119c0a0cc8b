"""The fixed latency histogram kept in every rollup row.

Buckets are log-spaced, two per octave (each ~41 % wider than the last), from 0.5 ms to
65.5 s, with one bucket below and one above: counts add up across rows and tiers, so
p50/p95/p99 can be read from any aggregate of rollups, within one bucket of the exact value.
"""

import bisect
import math
from collections.abc import Sequence

# Upper edges, in ms, of every bucket but the last (which is unbounded): 2^(k/2), k=-2..32.
EDGES: tuple[float, ...] = tuple(2 ** (k / 2) for k in range(-2, 33))
SIZE = len(EDGES) + 1
FIELDS: tuple[str, ...] = tuple(f"h{index:02d}" for index in range(SIZE))


def bucket_of(ms: float) -> int:
    """The index of the bucket a response time falls in (edges belong to the upper one)."""
    return bisect.bisect_right(EDGES, ms)


def bounds(index: int) -> tuple[float, float]:
    """The [low, high) range of a bucket, in ms; the last one is open-ended."""
    low = EDGES[index - 1] if index > 0 else 0.0
    high = EDGES[index] if index < len(EDGES) else math.inf
    return low, high


def percentile(
    counts: Sequence[int], q: float, lowest: float | None, highest: float | None
) -> float | None:
    """The q-th quantile (0 < q ≤ 1, nearest rank) read from bucket counts.

    The bucket holding that rank is exact; inside it the value is interpolated linearly
    and kept within the observed minimum and maximum.
    """
    total = sum(counts)
    if total == 0 or lowest is None or highest is None:
        return None
    rank = max(1, math.ceil(q * total))
    seen = 0
    for index, count in enumerate(counts):
        if count and seen + count >= rank:
            low, high = bounds(index)
            low, high = max(low, lowest), min(high, highest)
            share = (rank - seen) / count
            return round(low + (high - low) * share, 3)
        seen += count
    return highest  # unreachable: the ranks add up to the total

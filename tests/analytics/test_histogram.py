"""Quantiles read from the fixed histogram: the nearest rank's bucket, interpolated inside
it and kept within the observed minimum and maximum."""

import pytest

from analytics import histogram


def test_known_values():
    counts = [0] * histogram.SIZE
    counts[histogram.bucket_of(10.0)] = 9  # [8, 11.31) ms
    counts[histogram.bucket_of(100.0)] = 1  # [90.5, 128) ms
    assert histogram.percentile(counts, 0.5, 9.0, 120.0) == pytest.approx(10.285, abs=0.001)
    assert histogram.percentile(counts, 0.95, 9.0, 120.0) == 120.0
    assert histogram.percentile(counts, 0.9, 9.0, 120.0) == pytest.approx(11.314, abs=0.001)
    assert histogram.percentile([0] * histogram.SIZE, 0.5, 1.0, 2.0) is None
    assert histogram.percentile(counts, 0.5, None, None) is None
    assert histogram.percentile([], 0.5, 1.0, 2.0) is None

"""`healthmon.metrics.observe_each` adds a batch of values into a histogram as observe()
does one value at a time: the same buckets, count and sum (it reads prometheus-client's
Histogram internals, so a change there fails here)."""

import random

import pytest
from prometheus_client import CollectorRegistry, Histogram

from healthmon.metrics import observe_each


def _samples(histogram: Histogram, name: str) -> dict[tuple[str, str], float]:
    (family,) = histogram.collect()
    return {
        (sample.name.removeprefix(name), sample.labels.get("le", "")): sample.value
        for sample in family.samples
        if "created" not in sample.name
    }


@pytest.mark.parametrize("seed", range(5))
def test_a_batch_lands_in_the_buckets_one_observe_each_would_fill(seed):
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not secrets
    bounds = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
    # Names of their own: in multiprocess mode, a value is kept per metric name and labels.
    one, bulk = (
        Histogram(f"h_{name}_{seed}", "h", ["type"], buckets=bounds, registry=CollectorRegistry())
        for name in ("one", "bulk")
    )
    values = [rng.choice([0.0, 0.01, 10.0, 11.0]) for _ in range(50)]  # on the bounds too
    values += [rng.uniform(0, 12) for _ in range(500)]

    for value in values:
        one.labels(type="http").observe(value)
    observe_each(bulk.labels(type="http"), values[:100])
    observe_each(bulk.labels(type="http"), values[100:])
    observe_each(bulk.labels(type="http"), [])

    expected, got = _samples(one, f"h_one_{seed}"), _samples(bulk, f"h_bulk_{seed}")
    assert expected[("_count", "")] == len(values)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-12), key

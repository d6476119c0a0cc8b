"""What a set of checks adds up to: the sums a rollup row holds, built from checks on
ingest and from aggregated rows on reads."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from analytics import histogram
from analytics.rows import LatencyFigures


@dataclass
class Latency:
    """What a set of checks adds up to; response-time figures cover successes only, and of
    those only the `timed` ones: a heartbeat ping with no paired start has no time."""

    count: int = 0
    failures: int = 0
    timed: int = 0
    sum_ms: float = 0.0
    min_ms: float | None = None
    max_ms: float | None = None
    hist: list[int] = field(default_factory=lambda: [0] * histogram.SIZE)

    def add(self, ok: bool, ms: float | None) -> None:
        """Count one check; its time joins the latency figures if it succeeded and has one."""
        self.count += 1
        if not ok:
            self.failures += 1
            return
        if ms is None:
            return
        self.timed += 1
        self.sum_ms += ms
        self.min_ms = ms if self.min_ms is None else min(self.min_ms, ms)
        self.max_ms = ms if self.max_ms is None else max(self.max_ms, ms)
        self.hist[histogram.bucket_of(ms)] += 1

    def merge(self, row: Mapping[str, Any]) -> None:
        """Add an aggregated rollup row; rows read without histograms leave them empty."""
        hist = [row[name] for name in histogram.FIELDS] if histogram.FIELDS[0] in row else ()
        self.merge_sums(
            row["count"],
            row["failures"],
            row["timed"],
            row["sum_ms"],
            row["min_ms"],
            row["max_ms"],
            hist,
        )

    def merge_sums(
        self,
        count: int | None,
        failures: int | None,
        timed: int | None,
        sum_ms: float | None,
        low: float | None,
        high: float | None,
        hist: Sequence[int | None] = (),
    ) -> None:
        """Add aggregated sums read as a tuple; rows read without histograms pass none."""
        self.count += count or 0
        self.failures += failures or 0
        self.timed += timed or 0
        self.sum_ms += sum_ms or 0.0
        if low is not None:
            self.min_ms = low if self.min_ms is None else min(self.min_ms, low)
        if high is not None:
            self.max_ms = high if self.max_ms is None else max(self.max_ms, high)
        for index, value in enumerate(hist):
            self.hist[index] += value or 0

    @property
    def successes(self) -> int:
        """Checks that succeeded."""
        return self.count - self.failures

    @property
    def avg_ms(self) -> float | None:
        """The mean response time of the timed successes; None when there is none."""
        return round(self.sum_ms / self.timed, 3) if self.timed else None

    def percentile(self, q: float) -> float | None:
        """The q-th quantile of successful response times, from the histogram."""
        return histogram.percentile(self.hist, q, self.min_ms, self.max_ms)

    def figures(self) -> LatencyFigures:
        """The response-time and rate figures, as the API shows them."""
        rate = (lambda part: round(100 * part / self.count, 4)) if self.count else None
        return {
            "checks": self.count,
            "failures": self.failures,
            "success_rate": rate(self.successes) if rate else None,
            "error_rate": rate(self.failures) if rate else None,
            "avg_ms": self.avg_ms,
            "min_ms": self.min_ms,
            "max_ms": self.max_ms,
            "p50_ms": self.percentile(0.50),
            "p95_ms": self.percentile(0.95),
            "p99_ms": self.percentile(0.99),
        }

"""A check as the pipeline carries it: one probe result for one endpoint's slot, or a
multi-location round's verdict."""

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from monitoring.probes import ProbeResult


@dataclass(frozen=True)
class CheckOutcome:
    """A probe result for one endpoint's slot, from one location (`location` as stored:
    empty for the default one), in a round `expected` locations were sent; or a round's
    verdict (`location` ROUND_LOCATION), which the stages after the store take as one
    check."""

    endpoint_id: UUID
    scheduled_for: datetime
    checked_at: datetime
    result: ProbeResult
    location: str = ""
    expected: int = 1

    @property
    def ok(self) -> bool:
        """Whether the check (or round) succeeded; with `response_time_ms`, what the
        rollups count of it."""
        return self.result.ok

    @property
    def response_time_ms(self) -> float | None:
        """The check's response time (a round's: the mean of its successful locations)."""
        return self.result.response_time_ms

    @property
    def in_round(self) -> bool:
        """Part of a multi-location round: judged with the round, not on its own."""
        return self.expected > 1


# The `location` of a round's verdict: every location that answered.
ROUND_LOCATION = "*"

"""The assertion results of an endpoint's latest check, derived rather than stored.

A check stops at its first unmet assertion and its error names it (`assertion 2 failed:
…, got …`), so the error alone says it all: a success met every assertion; a failure
at assertion N met the ones before it, failed N (the error shows the value found) and never
reached the rest; any other failure reached none. Nothing is added to each stored check.
A check from before the endpoint's last change may have run other assertions: none is shown.
"""

import re
from dataclasses import dataclass
from typing import Any

from monitoring.models import CheckResult, Endpoint

_FAILED = re.compile(r"assertion (\d+) failed: .*, got (.*)", re.S)


@dataclass(frozen=True)
class AssertionResult:
    """One assertion and what the latest check made of it: met, failed or not reached."""

    number: int
    source: str
    property: str
    comparison: str
    target: Any
    outcome: str  # "met", "failed", "not checked"
    found: str = ""  # the value found, for the failed one (masked like every error)


def assertion_results(endpoint: Endpoint, check: CheckResult | None) -> list[AssertionResult]:
    """The endpoint's assertions with the outcome of the latest check; [] when it has none
    or the check ran before the endpoint was last changed."""
    assertions = endpoint.config_masked.get("assertions") or []
    if not assertions or check is None:
        return []
    if endpoint.watch_started_at is not None and check.scheduled_for < endpoint.watch_started_at:
        return []
    failed = _FAILED.fullmatch(check.error) if check.error else None
    reached = len(assertions) if check.ok else int(failed[1]) if failed else 0
    results = []
    for number, assertion in enumerate(assertions, start=1):
        outcome = "met" if number < reached or check.ok else "not checked"
        found = ""
        if failed and number == reached:
            outcome, found = "failed", failed[2]
        results.append(AssertionResult(number=number, outcome=outcome, found=found, **assertion))
    return results

"""Rounds of multi-location endpoints: each location's result is stored as it arrives; the
round is judged once, into one verdict the later stages take as one check.

A stage of the check pipeline (`pipeline.checks`), run in its transaction on the endpoints
the store stage locked, so two locations' batches of one round cannot judge it twice: the
second waits for the first's commit, then sees both results. A round whose locations have
not all answered waits as a `PendingRound`; the sweep (`rounds_sweep`) judges it with what
arrived once its `judge_at` passes, leaving the silent locations out as offline ones are.

`Endpoint.last_round_at` makes a verdict apply once: a round at or before it judges
nothing, so a late result of a judged round is stored (per-location figures read it) but
moves no status, streak or rollup.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from monitoring.checks import ROUND_LOCATION, CheckOutcome, endpoints_lock
from monitoring.locations import LocationResult, judge, quorum_of, shown_slug
from monitoring.models import CheckResult, Endpoint, PendingRound
from monitoring.probes import ProbeResult

# A round waits this long past its slot and timeout for its slowest location's result.
ROUND_GRACE = timedelta(seconds=30)
# Rounds one sweep transaction claims at most.
SWEEP_BATCH = 500

RoundKey = tuple[UUID, datetime]


def rounds_judge(
    *, endpoints: dict[UUID, Endpoint], outcomes: Sequence[CheckOutcome]
) -> list[CheckOutcome]:
    """The verdicts of the multi-location rounds these stored outcomes complete; the rounds
    still missing a location are left to wait (a `PendingRound`, made once).

    Runs inside the pipeline's transaction, after the store stage locked `endpoints`.
    """
    expected: dict[RoundKey, int] = {}
    detected: dict[RoundKey, str] = {}
    for o in outcomes:
        key = (o.endpoint_id, o.scheduled_for)
        if o.in_round:
            expected[key] = max(expected.get(key, 0), o.expected)
            detected[key] = o.result.detected_type or detected.get(key, "")
    if not expected:
        return []
    results = _round_results(expected)
    verdicts, waiting, done = [], [], []
    for key in sorted(expected, key=lambda k: k[1]):  # oldest first: last_round_at climbs
        endpoint, rows = endpoints[key[0]], results.get(key, [])
        if _judged(endpoint, key[1]):
            continue  # a late result of a judged round: stored, judges nothing
        if len({row.location for row in rows}) >= expected[key]:
            verdicts.append(_verdict(endpoint, key[1], rows, expected[key], detected[key]))
            done.append(key)
        else:
            # From the round's first answer, not its slot: a round whose batches ran late
            # (a queue backlog) still gives its other locations their time to answer.
            first = max(key[1], timezone.now())
            judge_at = first + timedelta(seconds=endpoint.timeout_seconds) + ROUND_GRACE
            waiting.append(
                PendingRound(
                    endpoint=endpoint,
                    scheduled_for=key[1],
                    expected=expected[key],
                    judge_at=judge_at,
                )
            )
    PendingRound.objects.bulk_create(waiting, ignore_conflicts=True)
    _forget(done)
    return verdicts


@dataclass(frozen=True)
class Swept:
    """What a sweep judged: the verdicts, and the endpoints it locked for them."""

    verdicts: list[CheckOutcome]
    endpoints: dict[UUID, Endpoint]
    claimed: int


def rounds_sweep(*, now: datetime) -> Swept:
    """Judge up to SWEEP_BATCH rounds whose `judge_at` passed, with the results that
    arrived, and forget them; a round with none judges nothing.

    Runs inside a transaction. PostgreSQL: the rounds are claimed FOR UPDATE SKIP LOCKED,
    so sweeps share the work; their endpoints are then locked in id order, skipping those a
    pipeline holds (it may be judging the round itself; its wait would deadlock with ours on
    the round's row): their rounds stay for the next sweep. Elsewhere (SQLite, one writer at
    a time) a round is claimed by deleting it.
    """
    claimed = _claim(now)
    if not claimed:
        return Swept([], {}, 0)
    endpoints = endpoints_lock(ids=sorted({r.endpoint_id for r in claimed}), skip_locked=True)
    claimed = [r for r in claimed if r.endpoint_id in endpoints]
    results = _round_results((r.endpoint_id, r.scheduled_for) for r in claimed)
    verdicts = []
    for pending in sorted(claimed, key=lambda r: r.scheduled_for):
        key = (pending.endpoint_id, pending.scheduled_for)
        endpoint, rows = endpoints[pending.endpoint_id], results.get(key, [])
        if rows and not _judged(endpoint, pending.scheduled_for):
            verdicts.append(_verdict(endpoint, pending.scheduled_for, rows, pending.expected, ""))
    PendingRound.objects.filter(pk__in=[r.pk for r in claimed]).delete()
    return Swept(verdicts, endpoints, len(claimed))


def _claim(now: datetime) -> list[PendingRound]:
    due = PendingRound.objects.filter(judge_at__lte=now).order_by("judge_at")
    if connection.features.has_select_for_update_skip_locked:
        return list(due.select_for_update(skip_locked=True)[:SWEEP_BATCH])
    rounds = list(due[:SWEEP_BATCH])
    # Compare and delete: of two sweeps, only the one whose delete removed the row judges it.
    return [r for r in rounds if PendingRound.objects.filter(pk=r.pk).delete()[0]]


def _judged(endpoint: Endpoint, slot: datetime) -> bool:
    """A round at or before the last one judged for the endpoint."""
    return endpoint.last_round_at is not None and slot <= endpoint.last_round_at


def _round_results(keys: Iterable[RoundKey]) -> dict[RoundKey, list[CheckResult]]:
    """The stored results of these rounds, every location's, by round."""
    wanted = set(keys)
    if not wanted:
        return {}
    slots = [slot for _, slot in wanted]
    rows = CheckResult.objects.filter(
        endpoint_id__in={pk for pk, _ in wanted},
        scheduled_for__gte=min(slots),
        scheduled_for__lte=max(slots),
    ).only(
        "endpoint_id", "scheduled_for", "checked_at", "location", "ok", "response_time_ms", "error"
    )
    found: dict[RoundKey, list[CheckResult]] = {}
    for row in rows.order_by():
        key = (row.endpoint_id, row.scheduled_for)
        if key in wanted:
            found.setdefault(key, []).append(row)
    return found


def _forget(keys: Sequence[RoundKey]) -> None:
    """Delete the waiting rounds of these (judged) rounds, if any waited."""
    if keys:
        match = Q()
        for endpoint_id, slot in keys:
            match |= Q(endpoint_id=endpoint_id, scheduled_for=slot)
        PendingRound.objects.filter(match).delete()


def _verdict(
    endpoint: Endpoint, slot: datetime, rows: Sequence[CheckResult], expected: int, detected: str
) -> CheckOutcome:
    """The round's verdict as one outcome, and the endpoint's `last_round_at` moved to it
    (saved with its state by `incidents_advance`)."""
    verdict = judge(
        [LocationResult(shown_slug(r.location), r.ok, r.response_time_ms, r.error) for r in rows],
        quorum_of(endpoint.config_masked),  # the quorum is no secret: config stays deferred
    )
    checked_at = max(r.checked_at for r in rows)
    up = verdict.judged_by - len(verdict.failing)
    result = ProbeResult(
        ok=verdict.ok,
        response_time_ms=verdict.response_time_ms,
        status_detail=f"{up} of {verdict.judged_by} locations up",
        error="" if verdict.ok else verdict.cause(),
        detected_type=detected,
        started_at=checked_at.timestamp(),
        failing_locations=verdict.cause() if verdict.partial else "",
    )
    endpoint.last_round_at = slot
    return CheckOutcome(
        endpoint.pk, slot, checked_at, result, location=ROUND_LOCATION, expected=expected
    )

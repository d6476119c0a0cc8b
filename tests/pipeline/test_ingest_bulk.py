"""Ingest's bulk statements: raw checks by COPY, rollups merged per tier in one statement,
the endpoints' state in one UPDATE; the same rows as the ORM writes, once per slot, in a
fixed number of statements whatever the batch size."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from analytics import histogram
from analytics.models import TIERS
from analytics.services import rollups_rebuild
from healthmon.db import update_each
from monitoring.bulk import rows_update
from monitoring.checks import CheckOutcome, checks_insert, endpoints_lock
from monitoring.checks import advance as monitoring_checks
from monitoring.models import CheckResult, Endpoint, EndpointStatus, Incident, StatusChange
from monitoring.probes import ProbeResult
from pipeline.checks import checks_record

T0 = datetime(2030, 3, 1, 23, 50, tzinfo=UTC)  # batches cross an hour and a midnight

COLUMNS = [
    "scheduled_for",
    "checked_at",
    "ok",
    "response_time_ms",
    "status_detail",
    "error",
    "error_detail",
    "location",
]


def outcome(endpoint: Endpoint, n: int, at: datetime, **result: object) -> CheckOutcome:
    """One check of a varied kind: a success, an untimed success, a failure with texts."""
    kind = n % 4
    fields: dict[str, object] = {
        "ok": kind != 3,
        "response_time_ms": None if kind == 2 else 10.5 + n,
        "status_detail": "HTTP 200" if kind != 3 else "HTTP 503",
        "error": "" if kind != 3 else "Server error",
        "error_detail": "" if kind != 3 else "upstream said no",
        "started_at": at.timestamp(),
    }
    fields.update(result)
    return CheckOutcome(
        endpoint.pk,
        at,
        at + timedelta(milliseconds=n),
        ProbeResult(**fields),  # type: ignore[arg-type]
        location="eu-west" if n % 5 == 0 else "",
    )


@pytest.fixture
def fleet(cast, make_endpoint):
    with time_machine.travel(T0 - timedelta(hours=1), tick=False):
        return [make_endpoint(cast.project, name=f"E{i}") for i in range(12)]


def batch(endpoints: list[Endpoint], round_: int) -> list[CheckOutcome]:
    at = T0 + timedelta(seconds=30 * round_)
    return [outcome(e, n + round_, at) for n, e in enumerate(endpoints)]


def rows_of(endpoints: list[Endpoint]) -> list[tuple]:
    """The stored checks of these endpoints, by position in the list, without ids."""
    position = {e.pk: n for n, e in enumerate(endpoints)}
    found = CheckResult.objects.filter(endpoint__in=endpoints).values_list("endpoint_id", *COLUMNS)
    return sorted((position[row[0]], *row[1:]) for row in found)


def rollup_rows() -> dict:
    return {
        (tier.__name__, row.pop("endpoint_id"), row.pop("bucket")): row
        for tier in TIERS
        for row in tier.objects.values(
            "endpoint_id",
            "bucket",
            "count",
            "failures",
            "timed",
            "sum_ms",
            "min_ms",
            "max_ms",
            *histogram.FIELDS,
        )
    }


@pytest.mark.postgres("COPY is PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_copy_stores_every_column_as_the_orm_does(fleet):
    by_copy, by_orm = fleet[:6], fleet[6:]
    with transaction.atomic():
        checks_insert(outcomes=batch(by_copy, 0), copy=True)
        checks_insert(outcomes=batch(by_orm, 0), copy=False)

    copied = rows_of(by_copy)
    assert copied == rows_of(by_orm)
    assert len(copied) == 6
    assert {row[8] for row in copied} == {"", "eu-west"}  # locations kept
    assert None in {row[4] for row in copied}  # an untimed success stays NULL
    ids = list(CheckResult.objects.filter(endpoint__in=by_copy).values_list("id", flat=True))
    assert len(set(ids)) == 6
    assert {i.version for i in ids} == {7}  # time-ordered, as the model's default makes them


@pytest.mark.django_db(transaction=True)
def test_a_batch_delivered_twice_stores_counts_and_moves_nothing_the_second_time(fleet):
    for round_ in range(3):
        assert checks_record(outcomes=batch(fleet, round_)) == 12
    checks, rollups = CheckResult.objects.count(), rollup_rows()
    state = list(Endpoint.objects.order_by("pk").values())
    changes = StatusChange.objects.count()

    assert checks_record(outcomes=batch(fleet, 2)) == 0
    assert checks_record(outcomes=batch(fleet, 1) + batch(fleet, 2)) == 0

    assert CheckResult.objects.count() == checks == 36
    assert rollup_rows() == rollups
    assert list(Endpoint.objects.order_by("pk").values()) == state
    assert StatusChange.objects.count() == changes


@pytest.mark.django_db(transaction=True)
def test_a_slot_twice_in_one_batch_is_stored_once_by_its_last_outcome(fleet):
    first, again = batch(fleet[:3], 0), batch(fleet[:3], 1)
    again = [
        replace(o, scheduled_for=f.scheduled_for, location=f.location)
        for o, f in zip(again, first, strict=True)
    ]

    assert checks_record(outcomes=first + again) == 3

    stored = sorted(CheckResult.objects.values_list("endpoint_id", "checked_at"))
    assert stored == sorted((o.endpoint_id, o.checked_at) for o in again)


@pytest.mark.django_db(transaction=True)
def test_rollups_merged_per_batch_equal_a_rebuild_from_raw_checks(fleet):
    # Several checks of one endpoint in a batch, across 5-minute, hour and day edges, and
    # a late batch arriving after a later one.
    outcomes = [
        outcome(e, n, T0 + timedelta(seconds=37 * k))
        for k in range(40)
        for n, e in enumerate(fleet[:5])
    ]
    checks_record(outcomes=outcomes[100:])
    checks_record(outcomes=outcomes[:100])
    merged = rollup_rows()
    assert sum(row["count"] for key, row in merged.items() if key[0] == "DayRollup") == 200

    with time_machine.travel(T0 + timedelta(days=1), tick=False):
        rollups_rebuild(
            endpoint_ids=[e.pk for e in fleet[:5]], start=T0, end=T0 + timedelta(days=1)
        )
    rebuilt = rollup_rows()
    assert rebuilt.keys() == merged.keys()
    for key, row in merged.items():
        assert row["sum_ms"] == pytest.approx(rebuilt[key]["sum_ms"])
        assert {**row, "sum_ms": 0} == {**rebuilt[key], "sum_ms": 0}


@pytest.mark.postgres("the one-statement UPDATE is PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_the_bulk_endpoint_update_writes_what_update_each_writes(fleet):
    fields = monitoring_checks._STATE_FIELDS
    bulk, each = fleet[:6], fleet[6:]
    for n, endpoint in enumerate(fleet):
        k = n % 6
        endpoint.status = [EndpointStatus.UP, EndpointStatus.DOWN, EndpointStatus.DEGRADED][k % 3]
        endpoint.last_checked_at = T0 + timedelta(seconds=k)
        endpoint.detected_type = "graphql" if k == 1 else ""
        endpoint.streak_ok = None if k == 0 else k % 2 == 0
        endpoint.streak_length = k * 7
        endpoint.streak_started_at = None if k == 0 else T0 - timedelta(minutes=k)
        endpoint.streak_error = 'it\'s "quoted", {braced}, and long ' * (k + 1)
        endpoint.last_round_at = None if k < 3 else T0
    rows_update(bulk, fields)
    update_each(each, fields)

    def state(endpoints):
        return [Endpoint.objects.filter(pk=e.pk).values_list(*fields).get() for e in endpoints]

    assert state(bulk) == state(each)
    assert state(bulk)[3][1] == T0 + timedelta(seconds=3)


@pytest.mark.django_db(transaction=True)
def test_statuses_streaks_and_incidents_move_as_before(fleet):
    endpoints = fleet[:4]

    def run(round_: int, ok: bool) -> None:
        at = T0 + timedelta(seconds=30 * round_)
        checks_record(
            outcomes=[
                outcome(e, 0, at, ok=ok, error="" if ok else "Connection refused")
                for e in endpoints
            ]
        )

    run(0, True)
    run(1, False)
    run(2, False)  # the failure threshold is 2: down, an incident each
    states = Endpoint.objects.filter(pk__in=[e.pk for e in endpoints])
    assert set(states.values_list("status", "streak_ok", "streak_length")) == {
        (EndpointStatus.DOWN, False, 2)
    }
    assert Incident.objects.open().filter(endpoint__in=endpoints).count() == 4
    run(3, True)
    assert set(states.values_list("status", "streak_ok", "streak_length", "streak_error")) == {
        (EndpointStatus.UP, True, 1, "")
    }
    assert Incident.objects.open().filter(endpoint__in=endpoints).count() == 0
    assert StatusChange.objects.filter(endpoint__in=endpoints).count() == 4 * 3


def statements(endpoints: list[Endpoint], round_: int) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        assert checks_record(outcomes=batch(endpoints, round_)) == len(endpoints)
    return [q["sql"].split()[0] for q in captured.captured_queries]


@pytest.mark.postgres("the statement budget of PostgreSQL's bulk path")
@pytest.mark.django_db(transaction=True)
def test_a_batch_costs_a_fixed_number_of_statements_whatever_its_size(cast, make_endpoint):
    with time_machine.travel(T0 - timedelta(hours=1), tick=False):
        fleet = [make_endpoint(cast.project, name=f"S{i}") for i in range(200)]
    for endpoints in (fleet[:2], fleet[2:]):
        for round_ in range(2):  # pending -> up, then the steady state
            checks_record(
                outcomes=[outcome(e, 0, T0 + timedelta(seconds=30 * round_)) for e in endpoints]
            )

    small = statements(fleet[:2], 2)
    large = statements(fleet[2:], 2)

    assert small == large
    # The lock, the taken slots, the share of the fold's lock, the rollups (one statement
    # for the three tiers), the open incidents, the endpoints' state; the COPY runs beside
    # them, on psycopg's cursor.
    assert large == ["BEGIN", "SELECT", "SELECT", "SELECT", "WITH", "SELECT", "UPDATE", "COMMIT"]


@pytest.mark.django_db(transaction=True)
def test_locked_endpoints_hold_what_the_orm_loads(fleet):
    for round_ in range(3):  # statuses, streaks and timestamps set
        checks_record(outcomes=batch(fleet, round_))
    names = [
        f.attname for f in Endpoint._meta.concrete_fields if f.attname not in ("target", "config")
    ]
    with transaction.atomic():
        locked = endpoints_lock(ids=[e.pk for e in fleet])
        orm = {e.pk: e for e in Endpoint.objects.select_related("project")}
        for pk, endpoint in locked.items():
            assert {n: getattr(endpoint, n) for n in names} == {
                n: getattr(orm[pk], n) for n in names
            }
            assert endpoint._state.adding is False
            assert endpoint._state.db == "default"
            assert endpoint.project.organization_id == orm[pk].project.organization_id
            assert endpoint.get_deferred_fields() == {"target", "config"}
            assert endpoint.target == orm[pk].target  # deferred, loaded on use
    assert len(locked) == 12


@pytest.mark.django_db(transaction=True)
def test_open_incidents_are_found_as_the_orm_finds_them(fleet):
    for round_ in range(3):  # every fourth check fails: some endpoints go down
        checks_record(
            outcomes=[outcome(e, 3, T0 + timedelta(seconds=30 * round_)) for e in fleet[:5]]
        )
    ids = [e.pk for e in fleet]
    found = monitoring_checks._open_incidents(ids)
    orm = list(Incident.objects.open().filter(endpoint_id__in=ids))
    fields = [f.attname for f in Incident._meta.concrete_fields]

    def values(incidents):
        return sorted(tuple(getattr(i, n) for n in fields) for i in incidents)

    assert len(orm) == 5
    assert values(found) == values(orm)
    assert {i._state.adding for i in found} == {False}


@pytest.mark.postgres("prepared statements are PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_a_batchs_bulk_statements_are_prepared_once_per_connection(fleet):
    for round_ in range(3):
        checks_record(outcomes=batch(fleet, round_))
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE from_sql = false")
        prepared = [row[0] for row in cursor.fetchall()]

    def kinds(mark: str) -> int:
        return sum(mark in statement for statement in prepared)

    # One prepared statement each, reused by every batch after the first.
    assert kinds("FOR NO KEY UPDATE") == 1  # the lock
    assert kinds('SELECT endpoint_id, scheduled_for, location FROM "monitoring_checkresult"') == 1
    assert kinds("analytics_rollup_1d") == 1  # the three tiers' one statement
    assert kinds('FROM "monitoring_incident"') == 1
    assert kinds('UPDATE "monitoring_endpoint"') == 1

"""The store stage: the batch's endpoints locked, and its results stored once per slot."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache, partial
from operator import attrgetter
from typing import Any
from uuid import UUID

from django.db import connection, models, transaction

from accounts.models import Project
from healthmon import metrics
from healthmon.db import bound_cursor
from healthmon.logging import get_logger
from monitoring.bulk import CHECK_COLUMNS, checks_copy, loaded
from monitoring.checks.outcome import CheckOutcome
from monitoring.locations import shown_slug
from monitoring.models import (
    CheckResult,
    Endpoint,
    time_ordered_uuid,
)

logger = get_logger(__name__)


@dataclass(frozen=True)
class Stored:
    """What the store stage wrote: the outcomes it stored (one row each), and the
    endpoints it locked (their state columns loaded, target and config deferred)."""

    outcomes: list[CheckOutcome]
    endpoints: dict[UUID, Endpoint]


def endpoints_lock(*, ids: Sequence[UUID], skip_locked: bool = False) -> dict[UUID, Endpoint]:
    """Lock endpoints in id order until the transaction ends, their state columns loaded
    (target and config deferred); with `skip_locked`, those another transaction holds are
    left out instead of waited for.

    FOR NO KEY UPDATE: it serialises pipelines as FOR UPDATE does, yet lets rows that
    refer to the endpoint (a ping being stored) be inserted meanwhile. The project comes
    along unlocked: a new incident takes its organization.
    """
    if connection.vendor == "postgresql":
        return _lock_on_postgresql(ids, skip_locked)
    locked = Endpoint.objects.without_secrets().select_related("project")
    locked = locked.select_for_update(no_key=True, of=("self",), skip_locked=skip_locked)
    return locked.order_by("pk").in_bulk(list(ids))


# What the pipeline's stages read of a locked endpoint: every column but the encrypted ones.
_LOCKED: list[Any] = [
    f for f in Endpoint._meta.concrete_fields if f.attname not in ("target", "config")
]


def _lock_on_postgresql(ids: Sequence[UUID], skip_locked: bool) -> dict[UUID, Endpoint]:
    """The same lock and rows as the ORM's query, the ids sent as one binary array: built
    by the ORM, 200 ids quoted into an IN list cost more CPU than the rest of the batch's
    queries (bench/README.md, ingest). The project comes with its organization only."""
    with bound_cursor() as cursor:
        cursor.execute(_lock_sql(skip_locked), [list(ids)])
        rows = cursor.fetchall()
    alias, set_project = connection.alias, Endpoint.project.field.set_cached_value
    # One project instance per project, as a prefetch shares them: most of a batch's
    # endpoints belong to a few projects.
    projects: dict[UUID, Project] = {}
    found = {}
    for row in rows:
        values = list(row[:-1])
        for n, convert in _LOCKED_JSON:
            values[n] = convert(values[n], None, connection)
        endpoint = loaded(Endpoint, _LOCKED_NAMES, values, alias)
        project = projects.get(values[_LOCKED_PROJECT])
        if project is None:
            project = loaded(Project, _PROJECT, (values[_LOCKED_PROJECT], row[-1]), alias)
            projects[project.pk] = project
        set_project(endpoint, project)
        found[endpoint.pk] = endpoint
    return found


_PROJECT = ("id", "organization_id")
_LOCKED_NAMES = [f.attname for f in _LOCKED]
_LOCKED_JSON: list[tuple[int, Any]] = [
    (n, f.from_db_value) for n, f in enumerate(_LOCKED) if isinstance(f, models.JSONField)
]
_LOCKED_PROJECT = _LOCKED_NAMES.index("project_id")


@cache
def _lock_sql(skip_locked: bool) -> str:
    """The statement of `_lock_on_postgresql` (names from the models only), built once."""
    quote = connection.ops.quote_name
    columns = ", ".join(f"e.{quote(f.column)}" for f in _LOCKED)
    return (
        f"SELECT {columns}, p.organization_id FROM {quote(Endpoint._meta.db_table)} e "  # noqa: S608
        f"JOIN {quote(Project._meta.db_table)} p ON p.id = e.project_id "
        "WHERE e.id = ANY(%b::uuid[]) ORDER BY e.id FOR NO KEY UPDATE OF e"
        + (" SKIP LOCKED" if skip_locked else "")
    )


def checks_store(*, outcomes: Sequence[CheckOutcome]) -> Stored:
    """Lock the outcomes' endpoints and store each result whose slot is still free.

    Runs inside the pipeline's transaction, which holds the locks to its end. The endpoint
    rows are locked in id order, so batches cannot deadlock; a duplicate delivery of the
    same batch waits, then finds its slots taken and stores nothing.
    """
    if not outcomes:
        return Stored([], {})
    ids = sorted({outcome.endpoint_id for outcome in outcomes}, key=attrgetter("int"))
    endpoints = endpoints_lock(ids=ids)
    # A batch's slots come from one dispatcher tick: a narrow time range, so one index
    # range probe per endpoint finds them (an IN list of 200 times made a slow plan).
    # A slot is taken per location: each location of a round stores its own result.
    slots = [o.scheduled_for for o in outcomes]
    taken = _taken(ids, min(slots), max(slots))
    # One outcome per free slot (a slot twice in the batch: its last outcome, in its first
    # place), each slot's key made once.
    by_slot: dict[tuple[UUID, datetime, str], CheckOutcome] = {}
    for o in outcomes:
        slot = (o.endpoint_id, o.scheduled_for, o.location)
        if o.endpoint_id in endpoints and slot not in taken:
            by_slot[slot] = o
    fresh = list(by_slot.values())
    checks_insert(outcomes=fresh)
    # Counted once the pipeline's transaction commits: a batch rolled back stored nothing.
    kinds = [(endpoints[o.endpoint_id].type, o.result.ok, o.result.response_time_ms) for o in fresh]
    _log_failures(fresh, endpoints)
    transaction.on_commit(partial(metrics.checks_observed, kinds=kinds), robust=True)
    return Stored(fresh, endpoints)


def _taken(ids: Sequence[UUID], first: datetime, last: datetime) -> set[tuple[UUID, datetime, str]]:
    """The (endpoint, slot, location) of the checks stored for these endpoints in
    [first, last]: on PostgreSQL one prepared statement, the ids one binary array (the
    ORM's IN list of 200 ids cost more CPU to build than the query took to run)."""
    if connection.vendor != "postgresql":
        return set(
            CheckResult.objects.filter(
                endpoint_id__in=ids, scheduled_for__gte=first, scheduled_for__lte=last
            ).values_list("endpoint_id", "scheduled_for", "location")
        )
    with bound_cursor() as cursor:
        cursor.execute(_taken_sql(), [list(ids), first, last])
        return set(cursor.fetchall())


@cache
def _taken_sql() -> str:
    """The statement of `_taken` on PostgreSQL (the model's names only), built once."""
    table = connection.ops.quote_name(CheckResult._meta.db_table)
    return (
        f"SELECT endpoint_id, scheduled_for, location FROM {table} "  # noqa: S608 - model's
        "WHERE endpoint_id = ANY(%b::uuid[]) AND scheduled_for >= %b AND scheduled_for <= %b"
    )


def checks_insert(*, outcomes: Sequence[CheckOutcome], copy: bool | None = None) -> None:
    """Write a row per outcome, whose slot the caller found free while holding its
    endpoint's lock: by one binary COPY (PostgreSQL's default), else through the ORM."""
    if copy is None:
        copy = connection.vendor == "postgresql"
    if copy:
        checks_copy(rows=(_row(o) for o in outcomes))
        return
    CheckResult.objects.bulk_create(
        CheckResult(**dict(zip(_COPIED, _row(o), strict=True))) for o in outcomes
    )


_COPIED = [name for name, _ in CHECK_COLUMNS]


def _row(o: CheckOutcome) -> tuple[Any, ...]:
    """A check's row, its values in `CHECK_COLUMNS` order."""
    result, ms = o.result, o.result.response_time_ms
    return (
        time_ordered_uuid(),
        o.endpoint_id,
        o.scheduled_for,
        o.checked_at,
        result.ok,
        None if ms is None else float(ms),
        result.status_detail,
        result.error,
        result.error_detail,
        o.location,
    )


def _log_failures(fresh: Sequence[CheckOutcome], endpoints: Mapping[UUID, Endpoint]) -> None:
    """A warning per failed check; its texts were already scrubbed of the target's secrets."""
    for o in fresh:
        if not o.result.ok:
            logger.warning(
                "check_failed",
                endpoint_id=str(o.endpoint_id),
                type=endpoints[o.endpoint_id].type,
                error=o.result.error,
                error_detail=o.result.error_detail,
                scheduled_for=o.scheduled_for.isoformat(),
                location=shown_slug(o.location),
            )

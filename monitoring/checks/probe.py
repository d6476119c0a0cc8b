"""The probing of a batch: each endpoint's target and config loaded (decrypted once per
worker process), and the probes run."""

import asyncio
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import Any, NamedTuple
from uuid import UUID

from django.conf import settings
from django.db import connection

from healthmon.db import bound_cursor
from healthmon.encryption import decrypt
from monitoring.checks.outcome import CheckOutcome
from monitoring.locations import default_slug, stored_slug
from monitoring.models import (
    Endpoint,
)
from monitoring.probes import ProbeTask, run_batch


def checks_probe(
    *,
    slots: Sequence[tuple[UUID, datetime]],
    location: str | None = None,
    expected: Mapping[UUID, int] | None = None,
) -> list[CheckOutcome]:
    """Probe the endpoints of a batch concurrently, each at its slot, from `location` (the
    default one when None); `expected` gives the locations each endpoint's round was sent
    to (1 when missing).

    Endpoints deleted or paused since they were claimed are skipped.
    """
    slug = location or default_slug()
    expected = expected or {}
    targets = _probe_targets([pk for pk, _ in slots])
    work = [(targets[pk], slot) for pk, slot in slots if pk in targets]
    tasks = [
        ProbeTask(
            target.type,
            target.target,
            target.config,
            float(target.timeout_seconds),
            not_before=slot.timestamp(),
            location=slug,
        )
        for target, slot in work
    ]
    results = asyncio.run(run_batch(tasks, concurrency=settings.PROBE_CONCURRENCY))
    stored = stored_slug(slug)
    return [
        CheckOutcome(
            target.pk,
            slot,
            datetime.fromtimestamp(result.started_at, UTC),
            result,
            location=stored,
            expected=max(1, int(expected.get(target.pk, 1))),
        )
        for (target, slot), result in zip(work, results, strict=True)
    ]


class _ProbeTarget(NamedTuple):
    """What a probe needs of an endpoint, no more."""

    pk: UUID
    type: str
    target: str
    config: dict[str, Any]
    timeout_seconds: int


def _probe_targets(ids: Sequence[UUID]) -> dict[UUID, _ProbeTarget]:
    """The probe targets of the enabled endpoints among `ids`, decrypted.

    Building endpoints cost the worker as much CPU as storing their results, and then
    decrypting their targets and configs as much again, every round for the same
    ciphertexts: on PostgreSQL the rows come by one prepared statement and each
    ciphertext is decrypted once per process (`_decrypted`).
    """
    if connection.vendor != "postgresql":
        wanted = Endpoint.objects.filter(enabled=True).only(
            "type", "target", "config", "timeout_seconds"
        )
        return {
            e.pk: _ProbeTarget(e.pk, e.type, e.target, e.config, e.timeout_seconds)
            for e in wanted.in_bulk(list(ids)).values()
        }
    with bound_cursor() as cursor:
        cursor.execute(_targets_sql(), [list(ids)])
        rows = cursor.fetchall()
    keys = tuple(settings.FIELD_ENCRYPTION_KEYS)
    return {
        pk: _ProbeTarget(
            pk, kind, _decrypted(keys, target), json.loads(_decrypted(keys, config)), timeout
        )
        for pk, kind, target, config, timeout in rows
    }


@cache
def _targets_sql() -> str:
    """The statement of `_probe_targets` on PostgreSQL (the model's names only), built once."""
    table = connection.ops.quote_name(Endpoint._meta.db_table)
    return (
        f"SELECT id, type, target, config, timeout_seconds FROM {table} "  # noqa: S608 - model's
        "WHERE id = ANY(%b::uuid[]) AND enabled"
    )


# Ciphertexts whose clear text a worker keeps: two per endpoint. Fernet tokens differ on
# every save, so a changed target or config is a new key here, never a stale hit.
_DECRYPTED_KEPT = 50_000


@lru_cache(maxsize=_DECRYPTED_KEPT)
def _decrypted(keys: tuple[str, ...], token: str) -> str:
    """`token` decrypted under `keys` (the setting's value, part of the cache key so that
    retiring a key makes its tokens fail again); a failure is not kept."""
    return decrypt(token)

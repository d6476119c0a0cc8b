"""The fold's watermark and lock: hourly and daily rollups made from five-minute ones.

Ingest adds a batch's checks to the five-minute tier only. Every minute a beat task
(`analytics.services.rollups_fold`) adds the five-minute rows of the buckets between the
watermark and a moment a minute ago into the hourly and daily tiers, and moves the
watermark (`RollupFold.folded_to`) in the same transaction. So an hourly or daily row holds
exactly its five-minute buckets before the watermark, and a read adds the five-minute rows
from the watermark on (its "tail"). A check that arrives for a bucket already folded (a late
batch) is added to every tier at once.

Why: each batch upserted three tiers, and the hourly and daily upserts were two thirds of
ingest's database time (bench/README.md, ingest); folded, an hourly row is written once per
five minutes per endpoint instead of once per check.

Batches and the fold exclude each other with a PostgreSQL advisory lock, shared by batches,
taken alone by the fold: a batch reads the watermark after its shared lock is granted (a
later statement, so a later snapshot), and the fold waits for the batches in flight, so no
batch decides by a watermark the fold has moved meanwhile. Elsewhere (SQLite) a write
transaction has the database to itself.

Reads never ask for the watermark first: each scan of hourly or daily rows has a twin over
the five-minute rows of its range from the watermark, which the statement reads in the
snapshot of its rows. A twin whose range ends at or before the watermark is gated off by a
condition on the watermark alone (a one-time filter): not even an index descent per endpoint.

No row means no fold has run: every tier is written per batch, and no read has a tail.
The first fold sets the watermark five minutes past the next bucket, so batches in flight
(their checks before it) still write every tier.
"""

from datetime import datetime

from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper

from analytics.models import RollupFold

# pg_advisory_xact_lock's key: "fold" in ASCII.
LOCK_KEY = 0x666F6C64


def batch_lock() -> None:
    """Share the fold's lock until the transaction ends (PostgreSQL; a no-op elsewhere)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock_shared(%s)", [LOCK_KEY])


def fold_lock() -> None:
    """Hold the fold's lock alone until the transaction ends: waits for the batches in
    flight; batches that come later wait for the fold."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])


def folded_to() -> datetime | None:
    """The watermark as the primary holds it now (None: no fold yet): the writers that
    decide by it (a batch, the fold, a rebuild, retention) never ask a replica."""
    return RollupFold.objects.using(connection.alias).values_list("folded_to", flat=True).first()


def tail_sql(using: BaseDatabaseWrapper, end: str) -> str:
    """The condition that keeps a read's tail (five-minute rows beside coarser ones) to the
    rows from the watermark on; `end` is the placeholder of the read's range end.

    The watermark is a scalar subquery: the same snapshot as the rows read beside it (NULL,
    so no tail row, when no fold has run). The range is gated by a condition on the
    watermark alone, which PostgreSQL checks once (a one-time filter): a range that ends at
    or before it reads no tail, not even an index descent per endpoint."""
    table = using.ops.quote_name(RollupFold._meta.db_table)
    folded = f"(SELECT folded_to FROM {table})"  # noqa: S608 - the model's table name
    return f" AND bucket >= {folded} AND {folded} < {end}"

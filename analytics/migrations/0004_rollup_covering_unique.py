"""On PostgreSQL: each rollup tier's unique (endpoint, bucket) made covering, and the
tables' vacuum and parallel settings set for the reads they serve.

- The unique index INCLUDEs the columns every figure but a percentile sums (count,
  failures, timed, sum_ms, min_ms, max_ms): uptime, success and error rates, averages,
  check counts and sparklines are then index-only scans over (endpoint, bucket), reading
  the few index pages that hold one endpoint's rows instead of one heap page per row
  (rows are written bucket by bucket for every organization at once, so a tenant's rows
  are spread over everyone's pages, and reading them pushed other tenants' pages out of
  the cache). The 36 histogram columns do not fit (an index holds at most 32 columns):
  percentiles still read the heap, for the rows of the page asked for.
- Index-only scans skip the heap only for pages the visibility map marks all-visible:
  autovacuum runs after 1% of a tier changed instead of 20% (the defaults leave most
  of a large table's recent pages unmarked for days).
- `parallel_workers = 0`: these reads are a few index range scans per endpoint; a
  parallel plan over them cost 3x the time of the plain one (bench/README.md).

The model state keeps the plain unique constraint (same name, same key columns: `ON
CONFLICT (endpoint_id, bucket)` and Django's validation are unchanged); SQLite keeps it
plain. The index is built CONCURRENTLY beside the old one, then swapped in one short
transaction (its lock asked for with a timeout, tried again), so writes are not blocked
while a large table is indexed.
"""

from django.db import migrations

from healthmon.db import with_lock_timeout

SWAP_LOCK_TIMEOUT = "5s"
SWAP_ATTEMPTS = 5
TABLES = ("analytics_rollup_5m", "analytics_rollup_1h", "analytics_rollup_1d")
COVERED = "count, failures, timed, sum_ms, min_ms, max_ms"
SETTINGS = (
    "autovacuum_vacuum_scale_factor = 0.01",
    "autovacuum_vacuum_insert_scale_factor = 0.01",
    "autovacuum_analyze_scale_factor = 0.02",
    "parallel_workers = 0",
)
RESET = (
    "autovacuum_vacuum_scale_factor",
    "autovacuum_vacuum_insert_scale_factor",
    "autovacuum_analyze_scale_factor",
    "parallel_workers",
)


def _swap_unique(schema_editor, table: str, include: str) -> None:
    """Build `<table>_unique` again (with `include`, if any) and swap it in."""
    new = f"{table}_unique_new"
    # A build interrupted earlier leaves an invalid index behind.
    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {new}")
    schema_editor.execute(
        f"CREATE UNIQUE INDEX CONCURRENTLY {new} ON {table} (endpoint_id, bucket){include}"
    )

    def swap() -> None:
        schema_editor.execute(f"ALTER TABLE {table} DROP CONSTRAINT {table}_unique")
        schema_editor.execute(f"ALTER INDEX {new} RENAME TO {table}_unique")
        schema_editor.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {table}_unique UNIQUE USING INDEX {table}_unique"
        )

    # The swap waits for the table's lock with a short timeout, tried again: queued
    # behind a long read, it would hold every writer of the tier waiting behind it.
    with_lock_timeout(
        swap,
        timeout=SWAP_LOCK_TIMEOUT,
        attempts=SWAP_ATTEMPTS,
        pause=lambda attempt: 1.0 + attempt,
        using=schema_editor.connection.alias,
    )


def cover(apps, schema_editor):
    """Covering uniques and table settings (PostgreSQL only)."""
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        _swap_unique(schema_editor, table, f" INCLUDE ({COVERED})")
        schema_editor.execute(f"ALTER TABLE {table} SET ({', '.join(SETTINGS)})")


def uncover(apps, schema_editor):
    """Plain uniques and default settings again."""
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        _swap_unique(schema_editor, table, "")
        schema_editor.execute(f"ALTER TABLE {table} RESET ({', '.join(RESET)})")


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY cannot run inside a transaction.
    atomic = False

    dependencies = [
        ("analytics", "0003_rollup_timed"),
    ]

    operations = [
        migrations.RunPython(cover, uncover, elidable=False),
    ]

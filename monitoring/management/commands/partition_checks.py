"""Copy the raw checks into the partitioned table ahead of migration 0024 (PostgreSQL)."""

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from monitoring.partitions import TABLE, partitioned
from monitoring.partitions_convert import (
    COPY_BATCH,
    partitions_cleanup,
    partitions_convert,
    partitions_copy,
    partitions_prepare,
)


class Command(BaseCommand):
    help = (
        "Make the partitioned raw checks table beside the current one and copy the rows in "
        "batches, kept in step by triggers until migration 0024 swaps it in (in "
        "milliseconds). Run it before `migrate` when the table is large; run it again to "
        "resume. --swap also swaps the tables now, as the migration would."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=int, default=COPY_BATCH, help="rows per transaction")
        parser.add_argument("--swap", action="store_true", help="swap the tables too")

    def handle(self, *args: Any, **options: Any) -> None:
        """Prepare and copy (and with --swap, finish); safe to interrupt and run again."""
        if connection.vendor != "postgresql":
            raise CommandError("Raw checks are partitioned on PostgreSQL only.")
        if not 1 <= options["batch"] <= 1_000_000:
            raise CommandError("--batch must be between 1 and 1,000,000.")
        ahead = settings.CHECK_PARTITIONS_AHEAD_DAYS
        if options["swap"]:
            done = partitions_convert(
                ahead_days=ahead, batch=options["batch"], say=self.stdout.write
            )
            self.stdout.write("Swapped in." if done else f"{TABLE} was already partitioned.")
            return
        if partitioned(table=TABLE):
            partitions_cleanup()
            self.stdout.write(f"{TABLE} is already partitioned.")
            return
        partitions_prepare(ahead_days=ahead)
        copied = partitions_copy(batch=options["batch"])
        self.stdout.write(
            f"Copied {copied:,} check(s); new checks are copied as they are stored. "
            "`manage.py migrate` swaps the tables."
        )

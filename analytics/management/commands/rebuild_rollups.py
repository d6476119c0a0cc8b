"""`manage.py rebuild_rollups`: recompute rollups from the raw checks still kept."""

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from analytics.services import rollups_rebuild
from monitoring.models import Endpoint

ENDPOINTS_PER_STEP = 20


class Command(BaseCommand):
    """Recompute every endpoint's rollups over the last days, a day and a few endpoints at
    a time (memory stays small). Use after restoring raw checks, or to repair."""

    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        """`--days N` (default: the raw retention)."""
        parser.add_argument("--days", type=int, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        """Rebuild day by day, oldest first."""
        days = settings.RAW_RETENTION_DAYS if options["days"] is None else options["days"]
        today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
        ids = list(Endpoint.objects.order_by("pk").values_list("pk", flat=True))
        read = 0
        for back in range(days, -1, -1):
            day = today - timedelta(days=back)
            for at in range(0, len(ids), ENDPOINTS_PER_STEP):
                step = ids[at : at + ENDPOINTS_PER_STEP]
                read += rollups_rebuild(endpoint_ids=step, start=day, end=day + timedelta(days=1))
        self.stdout.write(f"Rebuilt rollups of {len(ids)} endpoints from {read} checks.")

"""Re-encrypt every stored secret under the first key of FIELD_ENCRYPTION_KEYS."""

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from monitoring.models import Endpoint

BATCH = 500


class Command(BaseCommand):
    help = (
        "Re-encrypt endpoint targets and configs under the first FIELD_ENCRYPTION_KEYS key. "
        "Run after putting a new key first; then the old keys can be removed."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        """Rewrite the encrypted columns in batches, each batch in one transaction."""
        count = 0
        ids = list(Endpoint.objects.order_by("pk").values_list("pk", flat=True))
        for start in range(0, len(ids), BATCH):
            with transaction.atomic():
                batch = Endpoint.objects.select_for_update().filter(
                    pk__in=ids[start : start + BATCH]
                )
                for endpoint in batch.only("pk", "target", "config"):
                    endpoint.save(update_fields=["target", "config"])
                    count += 1
        self.stdout.write(f"Re-encrypted {count} endpoint(s).")

"""Mask, in rows stored by earlier versions, the target secrets a probe's message quoted."""

from typing import Any

from django.core.management.base import BaseCommand

from alerts.services import deliveries_scrub
from monitoring.models import Endpoint
from monitoring.services import endpoint_secret_forms, endpoint_stored_text_scrub


class Command(BaseCommand):
    help = (
        "Mask the secrets of every endpoint's target, in every form a probe sends them "
        "(plain, percent-encoded, a Basic header's base64), in stored check errors, incident "
        "causes and notification payloads. Run once after upgrading an installation whose "
        "probes stored messages before every form was masked; running it again changes nothing."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        """Scrub endpoint by endpoint, each in a transaction of its own."""
        endpoints = rows = 0
        for endpoint in Endpoint.objects.order_by("pk").iterator(chunk_size=500):
            secrets = endpoint_secret_forms(endpoint=endpoint)
            if not secrets:
                continue
            endpoints += 1
            rows += endpoint_stored_text_scrub(endpoint=endpoint, secrets=secrets)
            rows += deliveries_scrub(endpoint=endpoint, secrets=secrets)
        self.stdout.write(f"{endpoints} endpoints with secrets looked at, {rows} rows masked.")

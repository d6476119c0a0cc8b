"""Give existing endpoints a badge key and existing incidents their organization and state."""

import secrets

from django.db import migrations
from django.db.models import OuterRef, Subquery


def fill(apps, schema_editor):  # noqa: ANN001, ANN201 - Django's migration signature
    Endpoint = apps.get_model("monitoring", "Endpoint")
    Incident = apps.get_model("monitoring", "Incident")
    for pk in Endpoint.objects.filter(badge_key__isnull=True).values_list("pk", flat=True).iterator():
        Endpoint.objects.filter(pk=pk).update(badge_key=secrets.token_urlsafe(16))
    organization = Endpoint.objects.filter(pk=OuterRef("endpoint_id")).values(
        "project__organization_id"
    )[:1]
    Incident.objects.filter(organization__isnull=True).update(organization_id=Subquery(organization))
    Incident.objects.filter(resolved_at__isnull=False).update(state="resolved")


class Migration(migrations.Migration):
    dependencies = [("monitoring", "0018_incident_communication")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]

"""Incident reads bounded by the organization (issue 26, tenant isolation).

- `incident_org_open_idx`: an organization's open incidents, newest first (the overview's
  open incidents, the API's `?state=open`). They were read through
  `incident_one_open_per_endpoint`, which holds every organization's open incidents.
- `incident_org_open_first_idx`: the incident list's order within an organization (open
  ones first, then newest first; `monitoring.models.incidents.OPEN_FIRST`), so a page of
  the list is read in order from the index instead of joining and sorting all of the
  organization's incidents.

Built CONCURRENTLY on PostgreSQL: the incident table takes the check pipeline's writes,
which a plain CREATE INDEX would block.
"""

import django.db.models.expressions
import django.db.models.fields
from django.db import migrations, models

from healthmon.db import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("monitoring", "0025_probe_due_index")]

    operations = [
        AddIndexConcurrently(
            model_name="incident",
            index=models.Index(
                condition=models.Q(("resolved_at__isnull", True)),
                fields=["organization", "-started_at"],
                name="incident_org_open_idx",
            ),
        ),
        AddIndexConcurrently(
            model_name="incident",
            index=models.Index(
                models.F("organization"),
                django.db.models.expressions.Case(
                    django.db.models.expressions.When(
                        resolved_at__isnull=True, then=models.Value(0)
                    ),
                    default=models.Value(1),
                    output_field=django.db.models.fields.IntegerField(),
                ),
                models.OrderBy(models.F("started_at"), descending=True),
                models.OrderBy(models.F("id"), descending=True),
                name="incident_org_open_first_idx",
            ),
        ),
    ]

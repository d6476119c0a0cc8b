"""`config.degraded_threshold_ms` is now `config.degraded_above_ms`, the API contract's name:
rename the key in every stored config (and its displayable copy), so that the pipeline, the
pages and API clients read one name. The API still accepts the old name for one release."""

from django.db import migrations

OLD, NEW = "degraded_threshold_ms", "degraded_above_ms"


def _rename(apps, old, new):
    Endpoint = apps.get_model("monitoring", "Endpoint")
    changed = []
    for endpoint in Endpoint.objects.only("config", "config_masked").iterator(chunk_size=500):
        dirty = False
        for field in ("config", "config_masked"):
            config = getattr(endpoint, field) or {}
            if old in config:
                setattr(endpoint, field, {(new if k == old else k): v for k, v in config.items()})
                dirty = True
        if dirty:
            changed.append(endpoint)
    Endpoint.objects.bulk_update(changed, ["config", "config_masked"], batch_size=500)


def forwards(apps, schema_editor):
    _rename(apps, OLD, NEW)


def backwards(apps, schema_editor):
    _rename(apps, NEW, OLD)


class Migration(migrations.Migration):

    dependencies = [
        ('monitoring', '0015_tcp_smtp'),
    ]

    operations = [migrations.RunPython(forwards, backwards)]

"""The shape of a probe location's slug, shared by the settings that name locations
(PROBE_LOCATION, PROBE_LOCATIONS) and the Location model: it names a Celery queue."""

LOCATION_SLUG_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$"

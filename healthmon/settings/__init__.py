"""healthmon settings, read from the environment (see .env.example and the README).

Defaults make `make run` work with no external service: SQLite, a local-memory cache and
Celery's filesystem broker. DATABASE_URL, CACHE_URL and CELERY_BROKER_URL switch to
PostgreSQL and Redis in production.

One module per concern: `core` (Django's own), `product` (healthmon's), `operations` (read
replicas, metrics), `workers` (email, Celery), `api` (DRF, JWTs, the schema, logging);
`_env` holds the readers. Each imports from the others what it reads, so the order below is
only alphabetical.
"""

from healthmon.settings._env import *  # noqa: F403
from healthmon.settings.api import *  # noqa: F403
from healthmon.settings.core import *  # noqa: F403
from healthmon.settings.operations import *  # noqa: F403
from healthmon.settings.product import *  # noqa: F403
from healthmon.settings.workers import *  # noqa: F403

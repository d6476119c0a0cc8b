"""The per-heartbeat ping rate limit, decided in the cache before any database query.

A counter per ping key and wall-clock second (Redis in production, so every web process
shares it; locmem in development): the first `PING_RATE_PER_SECOND` pings of a second pass,
the rest are refused until the next second. A cache that fails lets the ping through: a
lost ping is worse than an unlimited one.
"""

import logging
import time

from django.conf import settings
from django.core.cache import cache

logger = logging.getLogger(__name__)
# A bucket outlives its second by one, long enough for every process's clock to leave it.
_BUCKET_SECONDS = 2


def ping_retry_after(key: str) -> int | None:
    """Count a ping of `key` in this second; the seconds to wait when it is over the rate,
    None when it may go on."""
    rate = settings.PING_RATE_PER_SECOND
    if not rate:
        return None
    now = time.time()
    bucket = f"pingrate:{key.lower()}:{int(now)}"
    try:
        count = _count(bucket)
    except Exception:  # the cache is down: do not lose the ping for it
        logger.warning("ping rate limit skipped: the cache failed", exc_info=True)
        return None
    return 1 if count > rate else None


def _count(bucket: str) -> int:
    """Add one to the bucket, creating it at 1 when it is new."""
    if cache.add(bucket, 1, timeout=_BUCKET_SECONDS):
        return 1
    try:
        return int(cache.incr(bucket))
    except ValueError:  # expired between the two calls
        cache.add(bucket, 1, timeout=_BUCKET_SECONDS)
        return 1

"""healthmon's own settings: URLs and lifetimes, keys, probes and locations, notifications,
retention, status pages."""

import base64
import binascii
import hashlib
import re
from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured

from healthmon.settings._env import _bool, _duration, _int_between, _networks, env
from healthmon.settings.core import DEBUG, SECRET_KEY
from healthmon.slugs import LOCATION_SLUG_PATTERN

# --- Product settings -----------------------------------------------------------------------

WEB_BASE_URL = env.str("WEB_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")
if not re.match(r"^https?://[^/\s]+$", WEB_BASE_URL):
    raise ImproperlyConfigured(
        f"WEB_BASE_URL={WEB_BASE_URL!r} must be an origin such as https://healthmon.example.com."
    )
JWT_ACCESS_TTL = _duration("JWT_ACCESS_TTL", timedelta(days=7))
PASSWORD_RESET_TIMEOUT = int(
    _duration("PASSWORD_RESET_TIMEOUT", timedelta(hours=1)).total_seconds()
)
INVITATION_TTL = _duration("INVITATION_TTL", timedelta(days=7))
EMAIL_VERIFICATION_TTL = _duration("EMAIL_VERIFICATION_TTL", timedelta(days=3))
REQUIRE_EMAIL_VERIFICATION = _bool("REQUIRE_EMAIL_VERIFICATION", False)
API_KEY_PREFIX = env.str("API_KEY_PREFIX", default="hm")
if not re.fullmatch(r"[a-z][a-z0-9]{0,15}", API_KEY_PREFIX):
    raise ImproperlyConfigured("API_KEY_PREFIX must be 1-16 lowercase letters or digits.")


def _fernet_keys(name: str) -> list[str]:
    """Read Fernet keys (comma-separated, newest first); in DEBUG, derive one if none is set."""
    keys = env.list(name, default=[])
    if not keys:
        if not DEBUG:
            raise ImproperlyConfigured(
                f"{name} is required when DEBUG is false: generate one with "
                '`python -c "from cryptography.fernet import Fernet; '
                'print(Fernet.generate_key().decode())"`.'
            )
        digest = hashlib.sha256(b"healthmon-field-encryption:" + SECRET_KEY.encode()).digest()
        return [base64.urlsafe_b64encode(digest).decode()]
    for key in keys:
        try:
            valid = len(base64.urlsafe_b64decode(key.encode())) == 32
        except (binascii.Error, ValueError):
            valid = False
        if not valid:
            raise ImproperlyConfigured(f"{name} holds a value that is not a Fernet key.")
    return keys


FIELD_ENCRYPTION_KEYS = _fernet_keys("FIELD_ENCRYPTION_KEYS")
MIN_CHECK_INTERVAL = int(_duration("MIN_CHECK_INTERVAL", timedelta(seconds=10)).total_seconds())
if not 2 <= MIN_CHECK_INTERVAL <= 86400:
    raise ImproperlyConfigured("MIN_CHECK_INTERVAL must be between 2 seconds and 1 day.")


# Probes refuse private, loopback, link-local, metadata and other non-public addresses
# unless allowed: a monitoring service must not become a door into its own network.
PROBE_ALLOW_PRIVATE_NETWORKS = _bool("PROBE_ALLOW_PRIVATE_NETWORKS", False)
PROBE_ALLOWED_NETWORKS = _networks("PROBE_ALLOWED_NETWORKS")
PROBE_BATCH_SIZE = _int_between("PROBE_BATCH_SIZE", 200, 1, 5000)
PROBE_CONCURRENCY = _int_between("PROBE_CONCURRENCY", 500, 1, 10_000)
PROBE_THREADS = _int_between("PROBE_THREADS", 32, 1, 1000)


def _location_slug(name: str, default: str) -> str:
    slug = env.str(name, default=default).strip()
    if slug and not re.fullmatch(LOCATION_SLUG_PATTERN, slug):
        raise ImproperlyConfigured(
            f"{name}: {slug!r} is not a location slug (lower-case letters, digits, hyphens)."
        )
    return slug


def _locations(name: str) -> list[tuple[str, str]]:
    """`slug:name,slug:name`; a name may be left out (then it is the slug)."""
    found = []
    for part in env.list(name, default=[]):
        slug, _, title = part.partition(":")
        slug = slug.strip()
        if not re.fullmatch(LOCATION_SLUG_PATTERN, slug):
            raise ImproperlyConfigured(f"{name}: {slug!r} is not a location slug.")
        found.append((slug, title.strip()[:100] or slug))
    return found


# Probe locations (README, "Probe locations"). The default location is served by workers
# started without PROBE_LOCATION; a worker started with it probes from that place and
# consumes only the queue `probes.<slug>`. PROBE_LOCATIONS defines locations ahead of their
# first worker (also editable in the admin).
PROBE_DEFAULT_LOCATION = _location_slug("PROBE_DEFAULT_LOCATION", "default") or "default"
PROBE_LOCATION = _location_slug("PROBE_LOCATION", "")
PROBE_LOCATIONS = _locations("PROBE_LOCATIONS")

# --- Notifications --------------------------------------------------------------------------
# Webhooks connect through the probes' network policy above. A failed delivery is tried
# again after NOTIFY_RETRY_BASE_SECONDS, then twice as long each time, up to
# NOTIFY_MAX_ATTEMPTS attempts; NOTIFY_FLAG_AFTER deliveries given up in a row flag the
# channel as failing (one attempt per delivery from then on, until one succeeds).
NOTIFY_TIMEOUT_SECONDS = _int_between("NOTIFY_TIMEOUT_SECONDS", 10, 1, 60)
NOTIFY_MAX_ATTEMPTS = _int_between("NOTIFY_MAX_ATTEMPTS", 6, 1, 20)
NOTIFY_RETRY_BASE_SECONDS = _int_between("NOTIFY_RETRY_BASE_SECONDS", 30, 0, 3600)
NOTIFY_FLAG_AFTER = _int_between("NOTIFY_FLAG_AFTER", 3, 1, 1000)

# --- Analytics retention (days) -------------------------------------------------------------
# Raw checks, then 5-minute and hourly rollups; daily rollups are kept forever.
RAW_RETENTION_DAYS = _int_between("RAW_RETENTION_DAYS", 14, 1, 3660)
ROLLUP_5M_RETENTION_DAYS = _int_between("ROLLUP_5M_RETENTION_DAYS", 14, 1, 3660)
ROLLUP_1H_RETENTION_DAYS = _int_between("ROLLUP_1H_RETENTION_DAYS", 90, 1, 3660)
# PostgreSQL keeps raw checks in a partition per UTC day; an hourly task makes today's and
# this many next days' ahead (a check of a day with none lands in the DEFAULT partition).
CHECK_PARTITIONS_AHEAD_DAYS = _int_between("CHECK_PARTITIONS_AHEAD_DAYS", 3, 1, 60)
# The overview's figures (uptimes, average, 24 h sparkline) of a page of endpoints are
# computed at most once per this many seconds, as often as the page refreshes itself;
# statuses and last checks are always read live. 0: computed on every request.
DASHBOARD_CACHE_SECONDS = _int_between("DASHBOARD_CACHE_SECONDS", 30, 0, 3600)
# Pings one heartbeat may send per second (its ping key, counted in the cache before any
# query); more are answered 429. 0: no limit.
PING_RATE_PER_SECOND = _int_between("PING_RATE_PER_SECOND", 5, 0, 10_000)
NUM_PROXIES = env.int("NUM_PROXIES", default=0)
if NUM_PROXIES < 0:
    raise ImproperlyConfigured("NUM_PROXIES must be 0 or more.")
AUTH_THROTTLE_RATE = env.str("AUTH_THROTTLE_RATE", default="20/minute")
if not re.fullmatch(r"\d+/(s|sec|second|m|min|minute|h|hour|d|day)", AUTH_THROTTLE_RATE):
    raise ImproperlyConfigured("AUTH_THROTTLE_RATE must look like 20/minute (s, m, h or d).")

# --- Status pages: password pages and custom domains -----------------------------------------
# Password guesses on a password page's unlock form, counted per client address and per page
# in windows of STATUS_PAGE_UNLOCK_WINDOW_SECONDS; over either limit the form answers 429.
STATUS_PAGE_UNLOCK_ATTEMPTS_PER_IP = _int_between(
    "STATUS_PAGE_UNLOCK_ATTEMPTS_PER_IP", 10, 1, 10_000
)
STATUS_PAGE_UNLOCK_ATTEMPTS_PER_PAGE = _int_between(
    "STATUS_PAGE_UNLOCK_ATTEMPTS_PER_PAGE", 100, 1, 100_000
)
STATUS_PAGE_UNLOCK_WINDOW_SECONDS = _int_between(
    "STATUS_PAGE_UNLOCK_WINDOW_SECONDS", 600, 1, 86_400
)
# Seconds a Host's custom-domain answer (negative ones too) is cached: a domain added to or
# removed from a page takes effect within this long.
STATUS_PAGE_DOMAIN_CACHE_SECONDS = _int_between("STATUS_PAGE_DOMAIN_CACHE_SECONDS", 10, 1, 10)

"""healthmon settings, read from the environment (see .env.example and the README).

Defaults make `make run` work with no external service: SQLite, a local-memory cache and
Celery's filesystem broker. DATABASE_URL, CACHE_URL and CELERY_BROKER_URL switch to
PostgreSQL and Redis in production.
"""

import base64
import binascii
import hashlib
import ipaddress
import os
import re
import tempfile
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any

import environ
from django.core.exceptions import ImproperlyConfigured

from healthmon import logging as healthmon_logging
from healthmon.slugs import LOCATION_SLUG_PATTERN

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if (BASE_DIR / ".env").is_file():
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# Where the product writes at run time, apart from the database: the filesystem broker of
# `make run` and the file email backend. The code directory may be read-only in production,
# so this is configurable; with Redis and SMTP nothing is written at all (beat keeps its
# schedule in memory, see CELERY_BEAT_SCHEDULER).
STATE_DIR = Path(env.str("STATE_DIR", default="") or BASE_DIR / "var").resolve()

_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration(name: str, default: timedelta) -> timedelta:
    """Read a duration given in seconds or with a unit suffix (`90`, `15m`, `12h`, `7d`)."""
    raw = env.str(name, default="")
    if not raw:
        return default
    match = _DURATION.match(raw)
    if not match or int(match.group(1)) == 0:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a positive duration: use seconds or a number with s, m, h or d."
        )
    return timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])


def _bool(name: str, default: bool) -> bool:
    """Read a boolean, refusing values that are neither true nor false."""
    raw = env.str(name, default="").strip().lower()
    if not raw:
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean: use true or false.")


# --- Core -----------------------------------------------------------------------------------

DEBUG = _bool("DEBUG", False)
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is required when DEBUG is false: set it to a long random string."
        )
    SECRET_KEY = "insecure-development-key-only-used-when-debug-is-on-000000"  # noqa: S105
if len(SECRET_KEY) < 32:
    raise ImproperlyConfigured("SECRET_KEY must be at least 32 characters (it signs the JWTs).")

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"] if DEBUG else [])

INSTALLED_APPS = [
    "django.contrib.admin",
    # Before django.contrib.auth, whose commands it overrides (`createsuperuser`): the first
    # app listed with a command wins.
    "accounts",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "apikeys",
    "monitoring",
    "alerts",
    "analytics",
    "statuspages",
    "pipeline",
    # The project package itself: the site's static files and template tags.
    "healthmon",
]

MIDDLEWARE = [
    # Before anything asks request.get_host(): a registered status page custom domain is
    # accepted (and routed to that page only); any other unknown host still gets a 400.
    "statuspages.middleware.CustomDomainMiddleware",
    # Outermost: the request id is bound before anything logs, and every answer carries it.
    "healthmon.requestlog.RequestLogMiddleware",
    # First, so that it times and counts every answer, redirects and refusals included.
    "healthmon.metrics.MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Around the session and the views: opens each request's database routing scope (read
    # replicas), so that the session's and the views' writes count as the caller's writes.
    "healthmon.dbrouting.ReplicaReadsMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.audit.AuditContextMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "healthmon.urls"
WSGI_APPLICATION = "healthmon.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Keep connections open between requests (a new PostgreSQL connection costs milliseconds);
# the health check drops a connection the server closed meanwhile.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # `make run` has the web server and worker threads writing at once: take the write
    # lock when a transaction starts, and wait for it, instead of failing "database is
    # locked" when a read transaction tries to become a write.
    DATABASES["default"]["OPTIONS"] = {"transaction_mode": "IMMEDIATE", "timeout": 20}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Bounded waits, so that a database that is down or out of reach answers requests
    # with a quick 503 (healthmon/errors.py) instead of hanging them. A new connection
    # gives up after DATABASE_CONNECT_TIMEOUT. A server that vanished without closing
    # its connections (a crash, a partition) is noticed by TCP after DATABASE_TCP_TIMEOUT:
    # when what we sent stays unacknowledged (tcp_user_timeout; the kernel would retry
    # for 15 minutes), or when keepalive probes go unanswered while we wait for a reply.
    _connect_timeout = _duration("DATABASE_CONNECT_TIMEOUT", timedelta(seconds=5))
    _tcp_timeout = int(_duration("DATABASE_TCP_TIMEOUT", timedelta(seconds=10)).total_seconds())
    DATABASES["default"]["OPTIONS"] = {
        "connect_timeout": int(_connect_timeout.total_seconds()),
        "tcp_user_timeout": _tcp_timeout * 1000,
        "keepalives": 1,
        "keepalives_idle": _tcp_timeout,
        "keepalives_interval": max(1, _tcp_timeout // 3),
        "keepalives_count": 3,
        **DATABASES["default"].get("OPTIONS", {}),  # what DATABASE_URL's query sets wins
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Covering indexes (`include=`) are for PostgreSQL, where the uptime reads use them; SQLite
# (`make run`) builds the same indexes without the included columns, which is what it warns of.
SILENCED_SYSTEM_CHECKS = ["models.W040"]

CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}

AUTH_USER_MODEL = "accounts.User"
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend"]
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 8},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# collectstatic writes here; point it outside the code directory when that is read-only.
STATIC_ROOT = Path(env.str("STATIC_ROOT", default="") or BASE_DIR / "staticfiles").resolve()
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = DEBUG

# Behind a TLS-terminating proxy, trust its X-Forwarded-Proto only when told to.
if _bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
# HSTS only when not DEBUG: a developer's browser would otherwise pin http://127.0.0.1 to TLS.
SECURE_HSTS_SECONDS = 0 if DEBUG else env.int("SECURE_HSTS_SECONDS", default=31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG and _bool("SECURE_HSTS_PRELOAD", True)
# Plain HTTP is redirected to HTTPS when not DEBUG, except the load balancer's health check.
# Behind a TLS-terminating proxy, set SECURE_PROXY_SSL_HEADER so requests read as secure.
SECURE_SSL_REDIRECT = not DEBUG and _bool("SECURE_SSL_REDIRECT", True)
# The status page custom-domain check is asked over plain HTTP by the TLS proxy itself
# (Caddy's on-demand TLS `ask`), before any certificate exists.
SECURE_REDIRECT_EXEMPT = [
    r"^api/v1/health$",
    r"^healthz$",
    r"^readyz$",
    r"^status-domains/check$",
]
# Content-Security-Policy: no inline script and nothing from other origins on any page. The
# admin's widgets set a few inline style attributes, hence 'unsafe-inline' for styles only.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
# Pages show what changed on commit; a session lasts two weeks of inactivity at most.
SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=14 * 24 * 3600)
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024

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


def _int_between(name: str, default: int, low: int, high: int) -> int:
    """Read an integer, refusing values outside [low, high]."""
    try:
        value = env.int(name, default=default)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a whole number.") from exc
    if not low <= value <= high:
        raise ImproperlyConfigured(f"{name} must be between {low} and {high}.")
    return value


def _networks(name: str) -> list[str]:
    """Read a comma-separated list of CIDR networks."""
    networks = env.list(name, default=[])
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: {network!r} is not an IP network.") from exc
    return networks


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

# --- Read replicas (README, "Read replicas") ------------------------------------------------
# PostgreSQL streaming replicas serve the reads of the dashboards, analytics and status pages
# (healthmon.dbrouting); every write, every worker and every other page use the primary.
# A new replica connection gives up after this long (libpq's least), so that a replica out of
# reach costs a request seconds at most before its reads go to the primary.
REPLICA_CONNECT_TIMEOUT_SECONDS = 2


def _replica_database(number: int, url: str, primary: dict[str, Any]) -> dict[str, Any]:
    # The message names the entry, never the URL: it may hold a password (so does
    # django-environ's warning about an unknown scheme, hence silenced).
    wrong = ImproperlyConfigured(
        f"DATABASE_REPLICA_URLS: entry {number} is not a PostgreSQL URL with a database name "
        "(postgres://user:password@host:5432/name)."
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = environ.Env.db_url_config(url.strip())
    except ValueError:
        raise wrong from None
    if config.get("ENGINE") != primary["ENGINE"] or not config.get("NAME"):
        raise wrong
    options = {
        **primary.get("OPTIONS", {}),
        "connect_timeout": REPLICA_CONNECT_TIMEOUT_SECONDS,
        **config.get("OPTIONS", {}),  # what the replica's URL sets wins
    }
    # A standby refuses writes anyway; a URL that names a primary (or a promoted standby)
    # must refuse them too.
    options["options"] = f"{options.get('options', '')} -c default_transaction_read_only=on"
    options["options"] = options["options"].strip()
    # MIRROR: tests make no database of their own on a replica; it shows the primary's.
    return {**primary, **config, "OPTIONS": options, "TEST": {"MIRROR": "default"}}


def replica_databases(urls: list[str], primary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The aliases `replica1`, `replica2`, ... of these URLs, with the primary's connection
    settings (CONN_MAX_AGE, health checks, timeouts, TCP keepalives) and read-only sessions."""
    if urls and primary["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured(
            "DATABASE_REPLICA_URLS needs PostgreSQL as the default database (DATABASE_URL): "
            "SQLite has no replicas."
        )
    return {
        f"replica{number}": _replica_database(number, url, primary)
        for number, url in enumerate(urls, start=1)
    }


_replicas = replica_databases(env.list("DATABASE_REPLICA_URLS", default=[]), DATABASES["default"])
DATABASES.update(_replicas)
DATABASE_REPLICAS = list(_replicas)
DATABASE_ROUTERS = ["healthmon.dbrouting.ReplicaRouter"]
# A replica further behind than this is skipped until it catches up; its health is asked at
# most this often per process. After a write, the caller reads the primary for
# READ_YOUR_WRITES_SECONDS: a replica in use may be up to the lag plus the check behind.
DATABASE_REPLICA_MAX_LAG_SECONDS = _int_between("DATABASE_REPLICA_MAX_LAG_SECONDS", 5, 0, 3600)
DATABASE_REPLICA_CHECK_SECONDS = _int_between("DATABASE_REPLICA_CHECK_SECONDS", 2, 1, 60)
READ_YOUR_WRITES_SECONDS = _int_between("READ_YOUR_WRITES_SECONDS", 10, 1, 3600)
if DATABASE_REPLICAS and (
    READ_YOUR_WRITES_SECONDS < DATABASE_REPLICA_MAX_LAG_SECONDS + DATABASE_REPLICA_CHECK_SECONDS
):
    raise ImproperlyConfigured(
        "READ_YOUR_WRITES_SECONDS must be at least DATABASE_REPLICA_MAX_LAG_SECONDS plus "
        "DATABASE_REPLICA_CHECK_SECONDS: a replica in use may be that far behind a write."
    )
if DATABASE_REPLICAS and CACHES["default"]["BACKEND"].endswith(("LocMemCache", "DummyCache")):
    # Who wrote lately is kept in the cache: a cache of one process would send a user's
    # next request, served by another process, to a replica that has not seen the write.
    raise ImproperlyConfigured(
        "DATABASE_REPLICA_URLS needs a cache shared by every web process (CACHE_URL, e.g. "
        "redis://): read-your-writes is kept there."
    )

# --- Operations: /healthz, /readyz, /metrics -----------------------------------------------

METRICS_ENABLED = _bool("METRICS_ENABLED", True)
# When set, /metrics wants `Authorization: Bearer <METRICS_TOKEN>`.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# prometheus-client's multiprocess mode: every process of this checkout (web, workers, beat)
# writes its samples here and /metrics sums them, so they must share it. The default, under
# the system's temporary directory (writable even when the code directory is not), is keyed
# by user and checkout; it is made at start, as is a configured one.
_metrics_key = hashlib.sha256(str(BASE_DIR).encode()).hexdigest()[:12]
PROMETHEUS_MULTIPROC_DIR = Path(
    env.str("PROMETHEUS_MULTIPROC_DIR", default="")
    or Path(tempfile.gettempdir()) / f"healthmon-metrics-{os.getuid()}-{_metrics_key}"
)
try:
    PROMETHEUS_MULTIPROC_DIR.mkdir(parents=True, exist_ok=True)
except OSError as exc:
    raise ImproperlyConfigured(
        f"PROMETHEUS_MULTIPROC_DIR={str(PROMETHEUS_MULTIPROC_DIR)!r} cannot be made: {exc}"
    ) from exc
# prometheus-client reads the variable itself, when it is first imported (after settings).
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(PROMETHEUS_MULTIPROC_DIR)
# The dispatcher runs every second: silent this long, /readyz reports it (API-CONTRACT.md).
DISPATCHER_SILENCE_SECONDS = 60

# --- Email ----------------------------------------------------------------------------------

EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
EMAIL_FILE_PATH = env.str("EMAIL_FILE_PATH", default=str(STATE_DIR / "mail"))
EMAIL_HOST = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = _bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="healthmon <noreply@localhost>")

# --- Celery ---------------------------------------------------------------------------------

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://")
CELERY_TASK_ALWAYS_EAGER = _bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = 120
CELERY_TASK_SOFT_TIME_LIMIT = 100
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker whose broker went away keeps trying (Celery gives up and exits after 100 tries,
# about 47 minutes), and keeps running the batches it holds: they store their checks, and
# if the broker hands one out again, it stores nothing twice (Celery 6 would cancel them).
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Beat keeps its schedule in memory: the dispatcher's state (each endpoint's next slot) lives
# in the database, so a file of last-run times would add nothing but a path that must be
# writable (beat died at start without it). A restarted beat runs each entry one period on.
CELERY_BEAT_SCHEDULER = "celery.beat:Scheduler"
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# The dispatcher has a queue of its own, so that it never waits behind probe batches: run a
# worker on it (`-Q dispatch`, or `-Q celery,dispatch` for one worker doing both).
CELERY_TASK_ROUTES = {
    "monitoring.tasks.dispatch_due_checks": {"queue": "dispatch"},
    "pipeline.tasks.run_heartbeat_deadlines": {"queue": "dispatch"},
    "pipeline.tasks.judge_pending_rounds": {"queue": "dispatch"},
}
# Update mails one status-page send task carries (one SMTP connection per batch).
STATUS_SUBSCRIBER_BATCH_SIZE = 100
# One beat entry for all endpoints: the dispatcher claims what is due and sends batches.
CELERY_BEAT_SCHEDULE = {
    "dispatch-due-checks": {
        "task": "monitoring.tasks.dispatch_due_checks",
        "schedule": 1.0,
        "options": {"expires": 5},
    },
    # Heartbeats past their deadline turn late, then down, within a few seconds of it.
    "heartbeat-deadlines": {
        "task": "pipeline.tasks.run_heartbeat_deadlines",
        "schedule": 2.0,
        "options": {"expires": 5},
    },
    # Rounds of multi-location endpoints with a silent location, judged once their wait
    # (the slot, the timeout and 30 s) is over.
    "judge-pending-rounds": {
        "task": "pipeline.tasks.judge_pending_rounds",
        "schedule": 5.0,
        "options": {"expires": 5},
    },
    "dispatch-deliveries": {
        "task": "alerts.tasks.dispatch_deliveries",
        "schedule": 5.0,
        "options": {"expires": 10},
    },
    # Public incident updates become one mail per confirmed status-page subscriber.
    "fan-out-subscriber-mails": {
        "task": "statuspages.tasks.fan_out_subscriber_mails",
        "schedule": 5.0,
        "options": {"expires": 10},
    },
    # Maintenance occurrences that started or ended become `maintenance.*` deliveries.
    "queue-maintenance-events": {
        "task": "alerts.tasks.queue_maintenance_events",
        "schedule": 20.0,
        "options": {"expires": 20},
    },
    # Escalation steps and reminders, within seconds of due (alerts.services.escalation).
    "run-escalations": {
        "task": "alerts.tasks.run_escalations",
        "schedule": 5.0,
        "options": {"expires": 10},
    },
    # Probe locations silent for 60 s go offline, once, and their operators are told.
    "watch-locations": {
        "task": "monitoring.tasks.watch_locations",
        "schedule": 5.0,
        "options": {"expires": 5, "queue": "dispatch"},
    },
    # Raw checks' daily partitions (PostgreSQL), made days before they are needed.
    "make-check-partitions": {
        "task": "monitoring.tasks.make_check_partitions",
        "schedule": 3600.0,
        "options": {"expires": 1800},
    },
    "apply-retention": {
        "task": "analytics.tasks.apply_retention",
        "schedule": 3600.0,
        "options": {"expires": 1800},
    },
}
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # An unacknowledged batch (its worker died) goes back to the queue after this long:
    # longer than a batch may run (90 s), shorter than it lives before expiring (300 s).
    # Workers look for such batches every tenth of it (at most every 10 s); kombu's
    # default looks only every 100 s, which could almost double the wait.
    _visibility_timeout = _int_between("CELERY_VISIBILITY_TIMEOUT", 120, 1, 240)
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {
        "visibility_timeout": _visibility_timeout,
        "unacked_restore_interval": min(10, max(1, _visibility_timeout // 10)),
        "unacked_restore_throttle": 1,
    }
if CELERY_BROKER_URL.startswith("filesystem://"):
    # kombu's filesystem transport, with each message written whole (healthmon/devbroker.py).
    CELERY_BROKER_TRANSPORT = "healthmon.devbroker:Transport"
    _broker_dir = STATE_DIR / "celery-broker"
    (_broker_dir / "processed").mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir),
        "data_folder_out": str(_broker_dir),
        "processed_folder": str(_broker_dir / "processed"),
        # Fanout exchange tables (worker control); kombu puts them in ./control otherwise.
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
        "polling_interval": 0.2,
    }

# --- REST API -------------------------------------------------------------------------------

REST_FRAMEWORK = {
    # An API key is recognised by its shape; anything else is tried as a JWT.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apikeys.authentication.ApiKeyAuthentication",
        "accounts.authentication.JWTAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["apikeys.permissions.HasScope"],
    "DEFAULT_FILTER_BACKENDS": ["healthmon.api.filters.FilterBackend"],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "healthmon.api.errors.ProblemJSONRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": [
        "healthmon.api.errors.JSONParser",
        "healthmon.api.errors.AnyBodyAsJSONParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "healthmon.api.pagination.PageNumberPagination",
    "DEFAULT_SCHEMA_CLASS": "apikeys.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "healthmon.api.errors.problem_exception_handler",
    "NUM_PROXIES": NUM_PROXIES,
    "UNAUTHENTICATED_USER": None,
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

SIMPLE_JWT = {
    "ACCESS_TOKEN_LIFETIME": JWT_ACCESS_TTL,
    "ALGORITHM": "HS256",
    "SIGNING_KEY": SECRET_KEY,
    "AUTH_HEADER_TYPES": ("Bearer",),
    "USER_ID_FIELD": "id",
    "USER_ID_CLAIM": "user_id",
    "UPDATE_LAST_LOGIN": False,
    "LEEWAY": 0,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "healthmon API",
    "DESCRIPTION": (
        "Service-health monitoring. Authenticate with `Authorization: Bearer <JWT or API key>`. "
        "Every error is an RFC 9457 problem+json document with a stable `code`."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "PARSER_WHITELIST": ["healthmon.api.errors.JSONParser"],
    "RENDERER_WHITELIST": ["rest_framework.renderers.JSONRenderer"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Every endpoint kind's schema has a `status` (monitoring.api.schema): one enum for all.
    "ENUM_NAME_OVERRIDES": {
        "EndpointStatusEnum": "monitoring.models.EndpointStatus",
        "PingKindEnum": "monitoring.models.PingKind",
        "KindEnum": "alerts.models.ChannelKind",
        "IncidentKindEnum": "monitoring.models.IncidentKind",
        "IncidentImpactEnum": "monitoring.models.IncidentImpact",
        "IncidentStateEnum": "monitoring.models.IncidentState",
    },
}

# --- Logging --------------------------------------------------------------------------------

# One structured line per event; json for machines, console for people at a terminal.
LOG_FORMAT = env.str("LOG_FORMAT", default="") or ("console" if DEBUG else "json")
if LOG_FORMAT not in healthmon_logging.FORMATS:
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r} is not a format: use json or console.")
# In development (DEBUG) Celery's per-tick lines (beat sending the dispatcher every second, each
# task received and succeeded) are logged at DEBUG: LOG_LEVEL=DEBUG shows them.
LOGGING = healthmon_logging.logging_config(
    fmt=LOG_FORMAT, level=env.str("LOG_LEVEL", default="INFO"), quiet_ticks=DEBUG
)

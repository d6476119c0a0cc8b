"""Django's own settings: apps, middleware, the database, cache, auth, static files and
security headers."""

from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from healthmon.settings._env import BASE_DIR, _bool, _duration, env

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

"""The REST API (DRF, JWTs, the OpenAPI schema) and logging."""

from django.core.exceptions import ImproperlyConfigured

from healthmon import logging as healthmon_logging
from healthmon.settings._env import env
from healthmon.settings.core import DEBUG, SECRET_KEY
from healthmon.settings.product import JWT_ACCESS_TTL, NUM_PROXIES

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

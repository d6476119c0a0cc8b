"""Structured logging for web, worker and beat: one line per event, JSON or console.

structlog renders every line, its own events and the standard library's (Django, Celery,
urllib3) alike, through one `ProcessorFormatter`; settings' LOGGING comes from
`logging_config`. The request middleware binds `request_id` with structlog's contextvars, so
every line written while a request is answered carries it. This module imports no app.
"""

import logging
import re
from typing import Any

import structlog

FORMATS = ("json", "console")
READINESS_PATH = "/readyz"

_SHARED: list[Any] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def get_logger(name: str) -> Any:
    """Return the structured logger of a module (a standard-library logger underneath)."""
    return structlog.stdlib.get_logger(name)


def _renderer(fmt: str) -> list[Any]:
    if fmt == "console":
        return [structlog.dev.ConsoleRenderer(colors=False)]
    return [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]


def logging_config(*, fmt: str, level: str, quiet_ticks: bool = False) -> dict[str, Any]:
    """Configure structlog and return the dictConfig that renders every logger the same way.

    `quiet_ticks` (development) logs Celery's routine lines at DEBUG (see `RoutineAtDebug`).
    """
    if fmt not in FORMATS:
        raise ValueError(f"LOG_FORMAT={fmt!r}: use json or console.")
    structlog.configure(
        processors=[
            *_SHARED,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Not cached: tests (and a reconfigured process) must see the current configuration.
        cache_logger_on_first_use=False,
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "structured": {
                "()": structlog.stdlib.ProcessorFormatter,
                "foreign_pre_chain": _SHARED,
                "processors": [
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    *_renderer(fmt),
                ],
            }
        },
        "filters": {
            "expected_unreadiness": {"()": ExpectedUnreadiness},
            "routine_at_debug": {"()": RoutineAtDebug},
            "ack_tokens": {"()": MaskAckTokens},
        },
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "structured"}},
        "root": {"handlers": ["console"], "level": level.upper()},
        # urllib3 logs request lines at DEBUG, and a notification's URL path is a credential
        # (Slack's, Discord's, Teams'): never below WARNING, whatever LOG_LEVEL says.
        "loggers": {
            "urllib3": {"level": "WARNING"},
            # Django's default config gives `django` a plain console handler in debug: drop it,
            # so its lines reach the root's renderer once.
            "django": {"handlers": [], "level": "INFO", "propagate": True},
            # On the logger, not the handler, so that no handler (a test's either) sees it.
            "django.request": {"filters": ["expected_unreadiness", "ack_tokens"]},
            # A refused form's line names the path too: an acknowledge link's is a credential.
            "django.security.csrf": {"filters": ["ack_tokens"]},
            **(
                {name: {"filters": ["routine_at_debug"]} for name in RoutineAtDebug.LINES}
                if quiet_ticks
                else {}
            ),
        },
    }


class ExpectedUnreadiness(logging.Filter):
    """Drop Django's error line for a 503 from /readyz: a load balancer polls it, and an
    unready answer is the route doing its job (the request line still records it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep every record but `django.request`'s for a /readyz 503."""
        if record.name != "django.request" or getattr(record, "status_code", None) != 503:
            return True
        request = getattr(record, "request", None)
        return getattr(request, "path", None) != READINESS_PATH


class MaskAckTokens(logging.Filter):
    """Mask the token of an acknowledge link (`/ack/<token>`) in the paths Django's request
    lines name ("Not Found: /ack/..."): the token acknowledges an incident without a login."""

    PATTERN = re.compile(r"/ack/[^/\s?#]+")

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep the record, its path arguments masked."""
        if isinstance(record.args, tuple):
            record.args = tuple(
                self.PATTERN.sub("/ack/<token>", arg) if isinstance(arg, str) else arg
                for arg in record.args
            )
        if isinstance(record.msg, str):
            record.msg = self.PATTERN.sub("/ack/<token>", record.msg)
        return True


class RoutineAtDebug(logging.Filter):
    """Log Celery's routine lines at DEBUG: beat's "Sending due task" and a task's "received"
    and "succeeded", which the dispatcher's one-second tick makes three a second (and kombu's
    warning that the filesystem broker's URL names no host).

    Set on their loggers, so a record is demoted before any handler sees it, and kept only
    when that logger allows DEBUG. A task's failure keeps its level.
    """

    LINES = {
        "celery.beat": "Scheduler: Sending due task",
        "celery.worker.strategy": "Task %(name)s[%(id)s] received",
        "celery.app.trace": "Task %(name)s[%(id)s] succeeded",
        # The filesystem broker's URL has no host, and kombu says so at every connection.
        "kombu.connection": "No hostname was supplied",
    }

    def filter(self, record: logging.LogRecord) -> bool:
        """Demote a routine record to DEBUG; drop it unless its logger allows DEBUG."""
        start = self.LINES.get(record.name)
        if start is None or record.levelno > logging.WARNING:
            return True
        if not str(record.msg).startswith(start):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)

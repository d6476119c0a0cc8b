"""Email and Celery: the broker, the workers' queues and beat's schedule."""

from typing import Any

from healthmon.settings._env import STATE_DIR, _bool, _int_between, env

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
    # Hourly and daily rollups folded from the five-minute ones (analytics.fold).
    "fold-rollups": {
        "task": "analytics.tasks.fold_rollups",
        "schedule": 60.0,
        "options": {"expires": 50},
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

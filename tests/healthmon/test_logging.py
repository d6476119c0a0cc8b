"""Structured logs (issue 19, item 5): one rendered line per event, a request id on each."""

import logging
from collections.abc import Iterator

import pytest
import structlog
from celery import Celery, current_app
from django.conf import settings
from django.test import Client

from healthmon import logging as healthmon_logging


def test_the_root_logger_renders_through_structlog():
    formatters = [handler.formatter for handler in logging.getLogger().handlers]
    assert any(isinstance(f, structlog.stdlib.ProcessorFormatter) for f in formatters)
    assert settings.LOGGING["root"]["level"] == "INFO"


def test_structlog_and_standard_library_lines_are_one_json_object_each(log_lines):
    healthmon_logging.get_logger("healthmon.test").info("check_failed", endpoint_id=7)
    logging.getLogger("django.server").warning("plain %s line", "library")

    ours, theirs = log_lines.all()
    assert ours["event"] == "check_failed"
    assert ours["endpoint_id"] == 7
    assert ours["level"] == "info"
    assert ours["logger"] == "healthmon.test"
    assert "timestamp" in ours
    assert theirs["event"] == "plain library line"
    assert theirs["level"] == "warning"
    assert theirs["logger"] == "django.server"


def test_console_format_renders_a_line_for_people():
    config = healthmon_logging.logging_config(fmt="console", level="DEBUG")
    options = dict(config["formatters"]["structured"])
    formatter = options.pop("()")(**options)
    record = logging.LogRecord("django", logging.INFO, __file__, 1, "hello", None, None)

    rendered = formatter.format(record)
    assert "hello" in rendered
    assert not rendered.startswith("{")
    assert config["root"]["level"] == "DEBUG"


def test_an_unknown_format_is_refused():
    with pytest.raises(ValueError, match="LOG_FORMAT"):
        healthmon_logging.logging_config(fmt="xml", level="INFO")


def test_each_request_is_one_line_with_its_route_status_duration_and_id(log_lines):
    response = Client().get("/healthz", HTTP_X_REQUEST_ID="proxy-42.a")

    assert response["X-Request-ID"] == "proxy-42.a"
    (line,) = log_lines.events("request")
    assert line["method"] == "GET"
    assert line["route"] == "healthz"
    assert line["status"] == 200
    assert line["request_id"] == "proxy-42.a"
    assert isinstance(line["duration_ms"], float)


@pytest.mark.parametrize("offered", ["", "has space", "x" * 129, "-leading", "a\nb", "é"])
def test_an_insane_request_id_is_replaced_by_a_fresh_one(log_lines, offered):
    response = Client().get("/healthz", HTTP_X_REQUEST_ID=offered)

    fresh = response["X-Request-ID"]
    assert fresh != offered
    assert len(fresh) == 32
    assert int(fresh, 16) >= 0
    assert log_lines.events("request")[0]["request_id"] == fresh


@pytest.mark.django_db
def test_the_request_id_is_bound_to_every_line_of_its_request(log_lines):
    response = Client().get("/api/v1/endpoints", HTTP_X_REQUEST_ID="trace-1")

    assert response.status_code == 401
    assert response["X-Request-ID"] == "trace-1"
    django_lines = [line for line in log_lines.all() if line["logger"] == "django.request"]
    assert django_lines, "Django logs a 4xx answer"
    assert all(line["request_id"] == "trace-1" for line in log_lines.all())
    # Nothing leaks into lines written after the request.
    healthmon_logging.get_logger("healthmon.test").info("later")
    assert "request_id" not in log_lines.events("later")[0]


@pytest.mark.django_db
def test_an_unready_answer_is_one_request_line_not_an_error_line(log_lines, caplog):
    response = Client().get("/readyz")  # the dispatcher never ran: 503

    assert response.status_code == 503
    assert response["X-Request-ID"]
    assert [line["status"] for line in log_lines.events("request")] == [503]
    assert not [line for line in log_lines.all() if line["logger"] == "django.request"]
    assert not [r for r in caplog.records if r.name == "django.request"]


@pytest.fixture
def queued() -> Iterator[Celery]:
    """The Celery app publishing for real (tests run tasks eagerly)."""
    app = current_app._get_current_object()
    eager, app.conf.task_always_eager = app.conf.task_always_eager, False
    yield app
    app.conf.task_always_eager = eager


def test_a_task_queued_while_answering_a_request_carries_its_id(queued):
    """The worker binds the header to the task's lines (the deploy test sees a real worker's)."""
    app = queued
    with app.connection_for_write("memory://") as connection:
        structlog.contextvars.bind_contextvars(request_id="trace-7")
        try:
            app.send_task("pipeline.tasks.run_checks", args=[[]], connection=connection)
        finally:
            structlog.contextvars.clear_contextvars()
        app.send_task("pipeline.tasks.run_checks", args=[[]], connection=connection)
        queue = connection.SimpleQueue(app.conf.task_default_queue)
        first, second = queue.get(timeout=1), queue.get(timeout=1)
        queue.close()

    assert first.headers["request_id"] == "trace-7"
    assert "request_id" not in second.headers  # beat's tasks belong to no request

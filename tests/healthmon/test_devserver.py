"""The pieces of `make run` that need no process: the demo services, the filesystem broker
that writes messages whole, the development log level of Celery's tick lines, the banner."""

import logging
import random
import urllib.error
import urllib.request

import pytest
from kombu import Connection

from healthmon import devserver, devtargets
from healthmon import logging as healthmon_logging


@pytest.fixture
def targets():
    server = devtargets.serve("127.0.0.1", 0)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def status(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - loopback
            return response.status
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code


def test_the_demo_services_answer_on_their_paths(targets):
    assert status(f"{targets}/catalog") == 200
    assert status(f"{targets}/nothing-here") == 404


def test_a_demo_service_answers_errors_at_its_rate_and_is_down_in_its_window():
    rng = random.Random(7)  # noqa: S311 - jitter
    failing = devtargets.Behaviour(latency=(0.0, 0.01), error_rate=1.0)
    outage = devtargets.Behaviour(latency=(0.0, 0.01), down_seconds=120, cycle_seconds=600)

    assert failing.answer(1000.0, rng)[0] == 500
    assert outage.answer(600.0 * 5 + 60, rng)[0] == 503
    assert outage.answer(600.0 * 5 + 300, rng)[0] == 200
    assert 0.0 <= outage.answer(0.0, rng)[1] <= 0.01


def test_the_filesystem_broker_delivers_whole_messages_and_skips_partial_files(tmp_path):
    folders = ("data_folder_in", "data_folder_out", "control_folder")
    options = {name: str(tmp_path) for name in folders}
    with Connection(transport="healthmon.devbroker:Transport", transport_options=options) as c:
        queue = c.SimpleQueue("dispatch")
        # A file still being written by another producer: not a message of the queue.
        (tmp_path / ".1_x.dispatch.msg.part").write_bytes(b"")
        queue.put({"tick": 1})
        message = queue.get(timeout=2)
        assert message.payload == {"tick": 1}
        message.ack()
        with pytest.raises(queue.Empty):
            queue.get(timeout=0.3)
        queue.close()
    assert not list(tmp_path.glob("*.msg"))


def record(name, message, level=logging.INFO):
    return logging.LogRecord(name, level, __file__, 1, message, None, None)


def test_routine_celery_lines_are_demoted_to_debug_and_dropped_at_info():
    routine = healthmon_logging.RoutineAtDebug()
    tick = record("celery.beat", "Scheduler: Sending due task %s (%s)")
    failure = record("celery.app.trace", "Task %(name)s[%(id)s] %(description)s", logging.ERROR)
    startup = record("celery.beat", "beat: Starting...")

    assert routine.filter(tick) is False
    assert tick.levelname == "DEBUG"
    assert routine.filter(failure) is True
    assert failure.levelname == "ERROR"
    assert routine.filter(startup) is True
    assert startup.levelname == "INFO"


def test_routine_celery_lines_show_at_debug_when_log_level_is_debug():
    logger = logging.getLogger("celery.worker.strategy")
    logger.setLevel(logging.DEBUG)
    try:
        line = record("celery.worker.strategy", "Task %(name)s[%(id)s] received")
        assert healthmon_logging.RoutineAtDebug().filter(line) is True
        assert line.levelno == logging.DEBUG
    finally:
        logger.setLevel(logging.NOTSET)


def test_only_development_quiets_the_tick_lines():
    quiet = healthmon_logging.logging_config(fmt="console", level="INFO", quiet_ticks=True)
    loud = healthmon_logging.logging_config(fmt="json", level="INFO")

    assert quiet["loggers"]["celery.beat"] == {"filters": ["routine_at_debug"]}
    assert "celery.beat" not in loud["loggers"]


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({}, "printed in this terminal"),
        (
            {
                "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
                "EMAIL_FILE_PATH": "/srv/mail",
            },
            "written to files in /srv/mail",
        ),
        (
            {
                "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "EMAIL_HOST": "mail.test",
            },
            "sent by SMTP to mail.test:25",
        ),
    ],
)
def test_the_banner_says_where_mails_go(env, words):
    text = devserver.banner("http://127.0.0.1:8000", env, demo="")

    assert f"mails (invitations, password resets) are {words}" in text
    assert "open http://127.0.0.1:8000/register to create your organization" in text
    assert "make superuser" in text
    assert "stop: press Ctrl-C" in text

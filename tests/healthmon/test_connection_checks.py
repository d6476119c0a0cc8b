"""A kept PostgreSQL connection is health-checked at a request's start only when the server
has sent something on it since its last answer (healthmon.db.skip_quiet_health_checks)."""

import select

import pytest
from django.core.signals import request_started
from django.db import connection

from healthmon.db import skip_quiet_health_checks

pytestmark = pytest.mark.postgres("the socket of a psycopg connection to a real server")


@pytest.fixture
def kept(transactional_db, monkeypatch):
    """The default connection, open and kept between requests, health checks on; the
    receivers in a server's order (Django's test client connects Django's own receiver
    again after each request it makes, after ours)."""
    request_started.disconnect(dispatch_uid="skip_quiet_health_checks")
    request_started.connect(skip_quiet_health_checks, dispatch_uid="skip_quiet_health_checks")
    connection.ensure_connection()
    monkeypatch.setattr(connection, "close_at", None)  # CONN_MAX_AGE never closes it here
    assert connection.health_check_enabled
    return connection


@pytest.fixture
def checks(kept, monkeypatch):
    """The health checks Django sends (`is_usable`: a `SELECT 1`), counted."""
    sent = []
    usable = kept.is_usable

    def counted():
        sent.append(1)
        return usable()

    monkeypatch.setattr(kept, "is_usable", counted)
    return sent


def backend_pid():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_an_idle_kept_connection_is_used_without_a_select_1(kept, checks):
    pid = backend_pid()

    request_started.send(sender=None)  # as each request starts
    assert backend_pid() == pid

    assert checks == []


def test_a_connection_the_server_ended_is_checked_and_replaced_at_the_next_request(kept, checks):
    pid = backend_pid()
    other = kept.copy()
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        other.close()
    # The server's goodbye (an error, then the end of the stream) reaches the socket.
    poller = select.poll()
    poller.register(kept.connection.fileno(), select.POLLIN)
    assert poller.poll(5000)

    request_started.send(sender=None)

    assert backend_pid() != pid
    assert checks == [1]


def test_a_connection_left_in_a_transaction_is_checked(kept, checks):
    with kept.cursor() as cursor:
        cursor.execute("BEGIN")
    try:
        request_started.send(sender=None)
        assert not kept.health_check_done
    finally:
        with kept.cursor() as cursor:
            cursor.execute("ROLLBACK")
    assert checks == [1]

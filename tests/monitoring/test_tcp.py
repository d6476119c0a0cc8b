"""The `tcp` kind against real asyncio peers: open, refusing, resetting, stalling, silent
after a wrong banner; its targets and options."""

import time

import pytest

from healthmon.errors import InvalidInput
from monitoring.models import Endpoint
from monitoring.probes.tcp import QUIET_SECONDS
from monitoring.targets import TargetError, validate_target
from monitoring.validation import validate_config
from tests.helpers import assert_problem
from tests.monitoring.async_peers import SSH_BANNER
from tests.monitoring.probing import is_phrase, run

SHORT = 1.0  # for checks that must time out


@pytest.fixture(autouse=True)
def _allow_loopback(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True


def test_an_open_port_is_up(silent_peer):
    result = run("tcp", silent_peer.url("tcp"))

    assert result.ok, result
    assert result.status_detail == "connected"
    assert result.response_time_ms > 0


def test_the_expected_banner_is_up(banner_peers):
    result = run("tcp", banner_peers["ssh"].url("tcp"), {"expect": "SSH-2.0-"})

    assert result.ok, result
    assert result.status_detail == SSH_BANNER.decode().strip()


def test_the_answer_to_what_is_sent_is_up(pong_peer):
    result = run("tcp", pong_peer.url("tcp"), {"send": "PING\r\n", "expect": "+PONG"})

    assert result.ok, result
    assert result.status_detail == "+PONG"


def test_a_refused_port_is_down(closed_port):
    result = run("tcp", f"tcp://127.0.0.1:{closed_port}")

    assert (result.ok, result.error) == (False, "connection refused")


def test_a_reset_is_down(reset_peer):
    result = run("tcp", reset_peer.url("tcp"), {"expect": "+OK"})

    assert (result.ok, result.error) == (False, "connection reset")


def test_a_server_that_never_answers_times_out(silent_peer):
    started = time.monotonic()
    result = run("tcp", silent_peer.url("tcp"), {"expect": "220"}, timeout=SHORT)

    assert (result.ok, result.error) == (False, "timed out after 1 s")
    assert time.monotonic() - started < SHORT + 1


def test_a_wrong_banner_is_down_naming_what_was_expected(banner_peers):
    started = time.monotonic()
    result = run("tcp", banner_peers["ssh"].url("tcp"), {"expect": "220"})

    assert not result.ok
    assert result.error == 'expected "220" not received'
    assert is_phrase("tcp", result.error)
    assert result.error_detail == f"received: {SSH_BANNER.decode()}".strip()
    # Down once the server has gone quiet, not only when the check's timeout ends.
    assert time.monotonic() - started < QUIET_SECONDS + 2


def test_a_server_hanging_up_without_the_banner_is_down(hangup_peer):
    result = run("tcp", hangup_peer.url("tcp"), {"expect": "220"})

    assert (result.ok, result.error) == (False, 'expected "220" not received')
    assert result.error_detail == "the server sent nothing and closed"


def test_a_long_expected_text_is_cut_in_the_error(banner_peers):
    expect = "x" * 100

    result = run("tcp", banner_peers["ssh"].url("tcp"), {"expect": expect})

    assert result.error == f'expected "{"x" * 39}…" not received'


# --- Targets and options ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    ["tcp://db.example.com:5432", "TCP://db.example.com:22", "tcp://[2001:db8::1]:25"],
)
def test_tcp_targets(target):
    assert validate_target("tcp", target) == "tcp" + target[3:]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("tcp://db.example.com", "A port is required"),
        ("tcp://db.example.com:0", "between 1 and 65535"),
        ("tcp://db.example.com:65536", "between 1 and 65535"),
        ("tcp://db.example.com:22/path", "nothing after the port"),
        ("tcp://db.example.com:22?x=1", "nothing after the port"),
        ("tcp://user@db.example.com:22", "nothing after the port"),
        ("db.example.com:22", "tcp://"),
        ("http://db.example.com:22", "tcp://"),
    ],
)
def test_bad_tcp_targets(target, message):
    with pytest.raises(TargetError, match=message):
        validate_target("tcp", target)


def test_tcp_options_and_defaults():
    assert validate_config("tcp", {}) == {"degraded_above_ms": None, "send": "", "expect": ""}
    kept = validate_config("tcp", {"send": "PING\r\n", "expect": " +PONG"})
    assert (kept["send"], kept["expect"]) == ("PING\r\n", " +PONG")  # white space kept


def test_bad_tcp_options_are_named():
    with pytest.raises(InvalidInput) as refused:
        validate_config("tcp", {"send": ["x"], "expect": "x" * 1001, "verify_tls": True})

    assert set(refused.value.errors) == {"send", "expect", "verify_tls"}


def test_the_api_refuses_a_bad_tcp_endpoint_and_stores_nothing(api, cast):
    api.as_user(cast.owner)
    payload = {
        "project": str(cast.project.id),
        "name": "ssh",
        "type": "tcp",
        "target": "tcp://db.example.com:70000",
        "config": {"expect": "x" * 1001},
    }

    problem = assert_problem(api.post("/api/v1/endpoints", payload), 400, "validation_error")

    assert set(problem["errors"]) == {"target", "config.expect"}
    assert Endpoint.objects.count() == 0


def test_the_api_creates_a_tcp_endpoint(api, cast):
    api.as_user(cast.owner)
    payload = {
        "project": str(cast.project.id),
        "name": "ssh",
        "type": "tcp",
        "target": "tcp://db.example.com:22",
        "config": {"expect": "SSH-"},
    }

    response = api.post("/api/v1/endpoints", payload)

    assert response.status_code == 201, response.json()
    assert response.json()["config"]["expect"] == "SSH-"

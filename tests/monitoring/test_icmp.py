"""The ICMP probe: loopback up, a silent host down, half lost degraded, and what a worker
without the privilege to ping does (the check fails with a phrase, creating one is refused).

Hosts that drop or half answer live in network namespaces of our own (`netns.py`, root only);
the unprivileged paths run in a child process with CAP_NET_RAW dropped, in a namespace of
its own where `net.ipv4.ping_group_range` is set as the case needs.
"""

import json
import os
import select
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitoring.checks import CheckOutcome
from monitoring.models import Endpoint, EndpointStatus
from monitoring.probes import probe
from monitoring.probes.icmp import icmp_mode
from monitoring.targets import TargetError, validate_target
from pipeline.checks import checks_record
from tests.helpers import assert_problem
from tests.monitoring.netns import Namespace, namespace, skip_unless_root

URL = "/api/v1/endpoints"
ROOT = Path(__file__).resolve().parents[2]
RESPONDER = Path(__file__).with_name("icmp_responder.py")
NOT_PERMITTED = "ICMP not permitted on this worker"
NOT_ALLOWED = "target address not allowed"
ANY_GROUP = "0 2147483647"
NO_GROUP = "1 0"  # Linux's default: no group may open ICMP datagram sockets


@pytest.fixture(autouse=True)
def _allow_private(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True


@pytest.fixture(scope="module")
def silent() -> Iterator[Namespace]:
    """A host on a veth link whose kernel ignores echo requests: every ping is lost."""
    with namespace() as ns:
        ns.run("sysctl", "-qw", "net.ipv4.icmp_echo_ignore_all=1")
        yield ns


@pytest.fixture(scope="module")
def half() -> Iterator[Namespace]:
    """A host that answers only even sequence numbers: exactly half of a series is lost."""
    with namespace() as ns:
        ns.run("sysctl", "-qw", "net.ipv4.icmp_echo_ignore_all=1")
        responder = ns.popen(sys.executable, str(RESPONDER))
        try:
            assert responder.stdout is not None
            ready, _, _ = select.select([responder.stdout], [], [], 10)
            assert ready
            assert responder.stdout.readline().strip() == "ready"
            yield ns
        finally:
            responder.kill()
            responder.communicate(timeout=10)  # reaps it and closes its pipes


# --- Up, down, partial loss -----------------------------------------------------------------


def test_loopback_answers_every_ping():
    skip_unless_root()

    result = probe("icmp", "icmp://127.0.0.1", {"count": 3})

    assert result.ok, result.error
    assert result.status_detail.startswith("3/3 replies, 0% loss, rtt min/avg/max ")
    assert result.loss_percent == 0
    assert 0 < result.response_time_ms < 100  # the average round trip, not the series' time


def test_ipv6_loopback_answers():
    skip_unless_root()

    result = probe("icmp", "icmp://[::1]", {"count": 1})

    assert result.ok, result.error
    assert result.status_detail.startswith("1/1 replies")


@pytest.mark.services
def test_a_host_that_drops_every_ping_is_down(silent):
    result = probe("icmp", f"icmp://{silent.address}", {"count": 3}, timeout=3)

    assert not result.ok
    assert result.error == "all 3 pings lost"
    assert result.error_detail == f"0/3 replies from {silent.address}"


@pytest.mark.services
def test_a_series_fits_its_timeout_so_a_silent_host_is_lost_not_timed_out(silent):
    started = time.monotonic()

    result = probe("icmp", f"icmp://{silent.address}", {"count": 10}, timeout=1)

    assert result.error == "all 10 pings lost"
    assert time.monotonic() - started < 2


@pytest.mark.services
def test_half_lost_is_up_with_the_loss_in_the_detail(half):
    result = probe("icmp", f"icmp://{half.address}", {"count": 4}, timeout=5)

    assert result.ok, result.error
    assert result.status_detail.startswith("2/4 replies, 50% loss, rtt min/avg/max ")
    assert result.loss_percent == 50


@pytest.mark.services
@pytest.mark.parametrize(
    ("max_loss_percent", "status"),
    [(0, EndpointStatus.DEGRADED), (49, EndpointStatus.DEGRADED), (50, EndpointStatus.UP)],
)
def test_loss_above_the_maximum_makes_the_endpoint_degraded(
    half, cast, make_endpoint, max_loss_percent, status
):
    endpoint = make_endpoint(
        cast.project,
        type="icmp",
        target=f"icmp://{half.address}",
        config={"count": 4, "max_loss_percent": max_loss_percent},
    )
    result = probe("icmp", endpoint.target, endpoint.config, timeout=5)
    at = datetime.now(UTC)

    checks_record(outcomes=[CheckOutcome(endpoint.pk, at, at, result)])

    endpoint.refresh_from_db()
    assert endpoint.status == status


# --- Privileges ------------------------------------------------------------------------------

_CHILD = """
import json, django
django.setup()
from django.conf import settings
settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
from monitoring.probes import probe
from monitoring.probes.icmp import icmp_mode
result = probe("icmp", "icmp://127.0.0.1", {"count": 2})
print(json.dumps({"mode": icmp_mode(), "ok": result.ok, "error": result.error,
                  "detail": result.status_detail, "error_detail": result.error_detail}))
"""


def _without_raw_sockets(ping_group_range: str, *command: str) -> subprocess.CompletedProcess[str]:
    """Run a command without CAP_NET_RAW, in a new network namespace with this range."""
    skip_unless_root()
    script = (
        f"ip link set lo up && sysctl -qw net.ipv4.ping_group_range='{ping_group_range}' && "
        'exec setpriv --bounding-set=-net_raw --inh-caps=-net_raw "$@"'
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CACHE_URL")}
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    return subprocess.run(  # noqa: S603 - our own command line
        [unshare, "--net", "sh", "-c", script, "sh", *command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )


def test_root_sends_over_raw_sockets():
    skip_unless_root()

    assert icmp_mode() == "raw"
    assert icmp_mode(socket.AF_INET6) == "raw"


@pytest.mark.services
def test_without_raw_sockets_a_permitted_group_pings_over_datagram_sockets():
    child = _without_raw_sockets(ANY_GROUP, sys.executable, "-c", _CHILD)

    assert child.returncode == 0, child.stderr
    seen = json.loads(child.stdout)
    assert seen["mode"] == "datagram"
    assert seen["ok"] is True, seen
    assert seen["detail"].startswith("2/2 replies, 0% loss")


@pytest.mark.services
def test_with_neither_the_check_fails_with_a_phrase_saying_the_fix():
    child = _without_raw_sockets(NO_GROUP, sys.executable, "-c", _CHILD)

    assert child.returncode == 0, child.stderr  # the worker carries on
    seen = json.loads(child.stdout)
    assert seen["mode"] is None
    assert (seen["ok"], seen["error"]) == (False, NOT_PERMITTED)
    assert "CAP_NET_RAW" in seen["error_detail"]
    assert "ping_group_range" in seen["error_detail"]


@pytest.mark.skipif(
    os.environ.get("HM_ICMP_UNPRIVILEGED") != "1",
    reason="runs in a child without CAP_NET_RAW (test_creating_one_without_icmp_is_refused)",
)
def test_create_without_icmp_answers_400(api, cast):
    response = api.as_user(cast.owner).post(
        URL,
        {
            "project": str(cast.project.id),
            "name": "Gateway",
            "type": "icmp",
            "target": "icmp://192.0.2.1",
        },
    )

    body = assert_problem(response, 400, "icmp_unavailable")
    assert "CAP_NET_RAW" in body["detail"]
    assert "ping_group_range" in body["detail"]
    assert not Endpoint.objects.exists()


@pytest.mark.services
def test_creating_one_without_icmp_is_refused():
    this = f"{Path(__file__).relative_to(ROOT)}::test_create_without_icmp_answers_400"
    os.environ["HM_ICMP_UNPRIVILEGED"] = "1"
    try:
        child = _without_raw_sockets(
            NO_GROUP, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", this
        )
    finally:
        del os.environ["HM_ICMP_UNPRIVILEGED"]

    assert child.returncode == 0, child.stdout + child.stderr
    assert "1 passed" in child.stdout


def test_creating_one_where_icmp_works_is_accepted(api, cast):
    skip_unless_root()

    response = api.as_user(cast.owner).post(
        URL,
        {
            "project": str(cast.project.id),
            "name": "Gateway",
            "type": "icmp",
            "target": "icmp://192.0.2.1",
        },
    )

    assert response.status_code == 201, response.content
    assert response.json()["config"] == {
        "degraded_above_ms": None,
        "count": 3,
        "max_loss_percent": 0,
    }


# --- Input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"count": 0}, "config.count"),
        ({"count": 11}, "config.count"),
        ({"max_loss_percent": 101}, "config.max_loss_percent"),
        ({"max_loss_percent": -1}, "config.max_loss_percent"),
        ({"size": 56}, "config.size"),
    ],
)
def test_bad_options_are_refused_by_name(api, cast, config, field):
    response = api.as_user(cast.owner).post(
        URL,
        {
            "project": str(cast.project.id),
            "name": "Gateway",
            "type": "icmp",
            "target": "icmp://192.0.2.1",
            "config": config,
        },
    )

    body = assert_problem(response, 400, "validation_error")
    assert set(body["errors"]) == {field}
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize(
    "target",
    ["icmp://host:80", "icmp://host/path", "icmp://u:p@host", "icmp://host?x=1", "http://host"],
)
def test_bad_targets_are_refused(target):
    with pytest.raises(TargetError):
        validate_target("icmp", target)


@pytest.mark.parametrize("target", ["icmp://gateway.example.com", "icmp://[2001:db8::1]"])
def test_good_targets(target):
    assert validate_target("icmp", target) == target


# --- Network policy --------------------------------------------------------------------------


class EchoCanary:
    """Raw ICMP sockets that see every echo request reaching this host's loopback."""

    def __init__(self) -> None:
        self._v4 = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        self._v6 = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
        for sock in (self._v4, self._v6):
            sock.setblocking(False)

    def _drain(self, sock: socket.socket, request: int, header: bool) -> int:
        seen = 0
        while True:
            try:
                packet = sock.recv(65_535)
            except BlockingIOError:
                return seen
            icmp = packet[(packet[0] & 0x0F) * 4 :] if header else packet
            seen += icmp[0] == request

    def requests(self) -> int:
        """Echo requests seen since the last call."""
        time.sleep(0.05)  # let a request in flight arrive
        return self._drain(self._v4, 8, header=True) + self._drain(self._v6, 128, header=False)

    def close(self) -> None:
        self._v4.close()
        self._v6.close()


@pytest.fixture
def echo_canary() -> Iterator[EchoCanary]:
    skip_unless_root()
    canary = EchoCanary()
    yield canary
    canary.close()


ICMP_HOSTS = [
    "127.0.0.1",
    "127.1",
    "2130706433",
    "0x7f000001",
    "0177.0.0.1",
    "localhost",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[64:ff9b::7f00:1]",
    "0.0.0.0",  # noqa: S104 (an address to refuse, never bound)
    "0",
    "10.0.0.1",
    "169.254.169.254",
]


@pytest.mark.parametrize("host", ICMP_HOSTS)
def test_a_private_address_is_refused_and_never_pinged(settings, echo_canary, host):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = False
    settings.PROBE_ALLOWED_NETWORKS = []
    echo_canary.requests()
    try:
        target = validate_target("icmp", f"icmp://{host}")
    except TargetError:
        assert echo_canary.requests() == 0
        return

    result = probe("icmp", target, {"count": 1}, timeout=1)

    assert (result.ok, result.error, result.status_detail) == (False, NOT_ALLOWED, "")
    assert echo_canary.requests() == 0


def test_the_canary_sees_a_ping_when_private_networks_are_allowed(echo_canary):
    echo_canary.requests()

    assert probe("icmp", "icmp://127.0.0.1", {"count": 2}).ok

    assert echo_canary.requests() >= 2

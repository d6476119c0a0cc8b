"""The DNS probe against a real DNS server (`dns_peer.py`): every record type, expected
answers, NXDOMAIN, SERVFAIL, a refusal, no records, a slow server, the network policy on the
resolver's address, and the endpoint's options and targets through the API."""

import time
from collections.abc import Iterator

import pytest

from monitoring.models import Endpoint
from monitoring.probes import probe
from monitoring.targets import TargetError, dns_query, validate_target
from tests.helpers import assert_problem
from tests.monitoring.dns_peer import DNSPeer
from tests.monitoring.test_network_policy import CANARY_HOSTS, NOT_ALLOWED

URL = "/api/v1/endpoints"


@pytest.fixture(scope="module")
def peer() -> Iterator[DNSPeer]:
    server = DNSPeer()
    yield server
    server.stop()


@pytest.fixture
def allowed(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True


@pytest.fixture
def policy_on(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = False
    settings.PROBE_ALLOWED_NETWORKS = []


def ask(peer: DNSPeer, name: str, timeout: float = 2.0, **config):
    return probe("dns", f"dns://{peer.address}/{name}", config, timeout=timeout)


# --- Answers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "record_type", "detail"),
    [
        ("ok.test", "A", "A: 192.0.2.10, 192.0.2.11"),
        ("ok.test", "AAAA", "AAAA: 2001:db8::10"),
        ("www.ok.test", "CNAME", "CNAME: ok.test."),
        ("ok.test", "MX", "MX: 10 Mail.OK.test."),
        ("ok.test", "NS", "NS: ns1.ok.test."),
        ("ok.test", "TXT", "TXT: v=spf1 -all"),
        ("ok.test", "SOA", "SOA: ns1.ok.test. admin.ok.test. 2026112601 3600 600 86400 60"),
        ("_sip._tcp.ok.test", "SRV", "SRV: 10 5 5060 sip.ok.test."),
        ("ok.test", "CAA", 'CAA: 0 issue "letsencrypt.org"'),
        ("10.2.0.192.in-addr.arpa", "PTR", "PTR: ok.test."),
    ],
)
def test_each_record_type_is_up_with_its_answers(allowed, peer, name, record_type, detail):
    result = ask(peer, name, record_type=record_type)

    assert result.ok, result.error
    assert result.status_detail == detail


def test_a_name_behind_a_cname_answers_its_addresses(allowed, peer):
    result = ask(peer, "www.ok.test")

    assert result.status_detail == "A: 192.0.2.10, 192.0.2.11"


@pytest.mark.parametrize(
    ("record_type", "expected"),
    [
        ("A", ["192.0.2.11"]),
        ("A", ["192.0.2.10", "192.0.2.11"]),
        ("MX", ["10 mail.ok.test"]),  # case and the final dot do not matter
        ("MX", ["10   MAIL.OK.TEST."]),
        ("TXT", ["v=spf1 -all"]),
        ("A", []),
    ],
)
def test_expected_answers_present_are_up(allowed, peer, record_type, expected):
    result = ask(peer, "ok.test", record_type=record_type, expected=expected)

    assert result.ok, result.error


def test_an_expected_answer_missing_is_down_naming_it(allowed, peer):
    result = ask(peer, "ok.test", expected=["192.0.2.11", "192.0.2.99"])

    assert not result.ok
    assert result.error == "expected answer missing"
    assert result.error_detail == "missing: 192.0.2.99"
    assert result.status_detail == "A: 192.0.2.10, 192.0.2.11"


# --- Down ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "record_type", "error"),
    [
        ("missing.test", "A", "name does not exist (NXDOMAIN)"),
        ("broken.test", "A", "resolver failed (SERVFAIL)"),
        ("refused.test", "A", "query refused by the resolver"),
        ("ok.test", "PTR", "no PTR records"),
    ],
)
def test_failures_are_down_with_their_phrase(allowed, peer, name, record_type, error):
    result = ask(peer, name, record_type=record_type)

    assert not result.ok
    assert result.error == error
    assert result.error_detail


def test_a_server_slower_than_the_timeout_is_down(allowed, peer):
    started = time.monotonic()

    result = ask(peer, "slow.test", timeout=1.0)

    assert not result.ok
    assert result.error == "resolver did not answer"
    assert time.monotonic() - started < 2.0


def test_a_closed_port_is_down(allowed, closed_port):
    result = probe("dns", f"dns://127.0.0.1:{closed_port}/ok.test", timeout=1.0)

    assert not result.ok
    assert result.error in ("resolver did not answer", "resolver failed (SERVFAIL)")


# --- Network policy --------------------------------------------------------------------------


@pytest.mark.parametrize("host", CANARY_HOSTS)
def test_a_private_resolver_is_refused_and_never_asked(policy_on, peer, host):
    before = peer.queries
    try:
        target = validate_target("dns", f"dns://{host}:{peer.port}/ok.test")
    except TargetError:
        assert peer.queries == before
        return

    result = probe("dns", target, timeout=1.0)

    assert (result.ok, result.error, result.status_detail) == (False, NOT_ALLOWED, "")
    assert peer.queries == before


def test_the_resolver_counts_queries_when_private_networks_are_allowed(allowed, peer):
    before = peer.queries

    assert ask(peer, "ok.test").ok

    assert peer.queries > before


def test_an_allowed_network_lets_the_resolver_be_asked(policy_on, settings, peer):
    settings.PROBE_ALLOWED_NETWORKS = ["127.0.0.1/32"]

    assert ask(peer, "ok.test").ok


def test_the_system_resolver_is_not_judged_by_the_policy(policy_on):
    result = probe("dns", "dns://missing.invalid", timeout=1.0)

    assert result.error != NOT_ALLOWED


# --- Targets and options ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "query"),
    [
        ("dns://example.com", (None, 53, "example.com")),
        ("dns://example.com.", (None, 53, "example.com.")),
        ("dns://1.1.1.1/example.com", ("1.1.1.1", 53, "example.com")),
        (
            "dns://resolver.example.net:5353/_sip._tcp.example.com",
            ("resolver.example.net", 5353, "_sip._tcp.example.com"),
        ),
        ("dns://[2001:db8::53]:53/example.com", ("2001:db8::53", 53, "example.com")),
    ],
)
def test_good_targets(target, query):
    assert validate_target("dns", target) == target
    assert dns_query(target) == query


@pytest.mark.parametrize(
    "target",
    [
        "dns://example.com:53",  # a port without a resolver
        "dns://1.1.1.1/a/b",
        "dns://1.1.1.1/bad name",
        "dns://1.1.1.1/-bad-.com",
        "dns://u:p@1.1.1.1/example.com",
        "dns://1.1.1.1/example.com?x=1",
        "dns://",
        "https://example.com",
    ],
)
def test_bad_targets_are_refused(target):
    with pytest.raises(TargetError):
        validate_target("dns", target)


def _create(api, cast, **fields):
    return api.as_user(cast.owner).post(
        URL,
        {
            "project": str(cast.project.id),
            "name": "Mail DNS",
            "type": "dns",
            "target": "dns://1.1.1.1/example.com",
            **fields,
        },
    )


def test_create_fills_the_defaults(api, cast):
    response = _create(api, cast)

    assert response.status_code == 201, response.content
    assert response.json()["config"] == {
        "degraded_above_ms": None,
        "record_type": "A",
        "expected": [],
    }


@pytest.mark.parametrize(
    ("config", "fields"),
    [
        ({"record_type": "AXFR"}, {"config.record_type"}),
        ({"record_type": "mx"}, {"config.record_type"}),
        ({"expected": "192.0.2.1"}, {"config.expected"}),
        ({"expected": ["192.0.2.1", "", 5, ["x"]]}, {"config.expected.1", "config.expected.3"}),
        ({"expected": ["x"] * 51}, {"config.expected"}),
        ({"record_type": "TLSA", "expected": {}}, {"config.record_type", "config.expected"}),
    ],
)
def test_bad_options_are_refused_by_name(api, cast, config, fields):
    response = _create(api, cast, config=config)

    body = assert_problem(response, 400, "validation_error")
    assert set(body["errors"]) == fields
    assert not Endpoint.objects.exists()

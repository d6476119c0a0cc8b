"""The `tls` kind and the certificates every TLS-speaking probe records, against real local
TLS peers serving certificates of a private test CA (or a self-signed one)."""

import asyncio
import datetime
import socket
import time
from collections.abc import Iterator

import pytest

from monitoring.probes import phrases
from monitoring.probes.base import ProbeContext, tls_context
from monitoring.probes.certificates import handshakes, last_certificate
from tests.monitoring.authority import Authority
from tests.monitoring.peers import REDIS_URL, HTTPPeer, self_signed_context
from tests.monitoring.probing import is_phrase, run

SHORT = 1.0


@pytest.fixture(autouse=True)
def _allow_loopback(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True


@pytest.fixture(scope="session")
def authority() -> Authority:
    return Authority()


def _peer(context) -> Iterator[HTTPPeer]:
    peer = HTTPPeer(context)
    try:
        yield peer
    finally:
        peer.stop()


@pytest.fixture(scope="session")
def valid_peer(authority, tmp_path_factory) -> Iterator[HTTPPeer]:
    yield from _peer(authority.server_context(tmp_path_factory.mktemp("valid"), days=90))


@pytest.fixture(scope="session")
def expired_peer(authority, tmp_path_factory) -> Iterator[HTTPPeer]:
    directory = tmp_path_factory.mktemp("expired")
    yield from _peer(authority.server_context(directory, days=-2, issued_days_ago=92))


@pytest.fixture(scope="session")
def wrong_host_peer(authority, tmp_path_factory) -> Iterator[HTTPPeer]:
    directory = tmp_path_factory.mktemp("wrong")
    yield from _peer(authority.server_context(directory, host="elsewhere.example"))


@pytest.fixture(scope="session")
def expiring_peer(authority, tmp_path_factory) -> Iterator[HTTPPeer]:
    """A certificate with 5 days (and an hour) left."""
    directory = tmp_path_factory.mktemp("expiring")
    yield from _peer(authority.server_context(directory, days=5 + 1 / 24))


@pytest.fixture(scope="session")
def self_signed_peer(tmp_path_factory) -> Iterator[HTTPPeer]:
    yield from _peer(self_signed_context(tmp_path_factory.mktemp("self")))


def tls_target(peer) -> str:
    return f"tls://127.0.0.1:{peer.port}"


def trusting(authority) -> dict:
    return {"ca_certificate": authority.pem}


def test_a_valid_certificate_is_up_with_its_expiry_recorded(valid_peer, authority):
    result = run("tls", tls_target(valid_peer), trusting(authority))

    assert result.ok, result
    assert result.status_detail.startswith("TLSv1.")
    assert result.status_detail.endswith("expires in 89 days")
    certificate = result.certificate
    assert certificate is not None
    assert certificate.issuer == "CN=healthmon test CA"
    assert certificate.subject == "CN=127.0.0.1"
    left = certificate.expires_at - datetime.datetime.now(datetime.UTC)
    assert datetime.timedelta(days=89) < left <= datetime.timedelta(days=90)
    assert len(certificate.fingerprint) == 64


def test_a_private_ca_is_trusted_only_when_configured(valid_peer, authority):
    """An internal service signed by a private CA: down without it, up with it."""
    without = run("tls", tls_target(valid_peer))
    with_it = run("tls", tls_target(valid_peer), trusting(authority))
    https = run("http", valid_peer.url("/health", scheme="https"), trusting(authority))

    assert (without.ok, without.error) == (False, phrases.TLS_UNTRUSTED)
    assert with_it.ok, with_it
    assert https.ok, https


def test_an_expired_certificate_fails_and_is_still_recorded(expired_peer, authority):
    result = run("tls", tls_target(expired_peer), trusting(authority))

    assert (result.ok, result.error) == (False, phrases.TLS_EXPIRED)
    assert result.certificate is not None
    assert result.certificate.expires_at < datetime.datetime.now(datetime.UTC)


def test_a_certificate_for_another_host_fails(wrong_host_peer, authority):
    result = run("tls", tls_target(wrong_host_peer), trusting(authority))

    assert (result.ok, result.error) == (False, phrases.TLS_WRONG_HOST)
    assert result.certificate is not None
    assert result.certificate.subject == "CN=elsewhere.example"


def test_a_self_signed_certificate_is_not_trusted(self_signed_peer, authority):
    result = run("tls", tls_target(self_signed_peer), trusting(authority))

    assert (result.ok, result.error) == (False, phrases.TLS_UNTRUSTED)
    assert is_phrase("tls", result.error)


def test_verification_off_accepts_a_self_signed_certificate(self_signed_peer):
    result = run("tls", tls_target(self_signed_peer), {"verify_tls": False})

    assert result.ok, result
    assert result.certificate is not None


def test_a_certificate_expiring_in_5_days_is_up(expiring_peer, authority):
    """Expiring is no downtime: the thresholds warn of it instead."""
    result = run("tls", tls_target(expiring_peer), trusting(authority))

    assert result.ok, result
    assert result.status_detail.endswith("expires in 5 days")


def test_a_refused_port_is_down(closed_port):
    result = run("tls", f"tls://127.0.0.1:{closed_port}")

    assert (result.ok, result.error) == (False, phrases.REFUSED)
    assert result.certificate is None


def test_a_peer_that_never_answers_times_out(stall_peer):
    started = time.monotonic()
    result = run("tls", tls_target(stall_peer), timeout=SHORT)

    assert not result.ok
    assert result.error == "timed out after 1 s"
    assert time.monotonic() - started < SHORT + 1


def test_a_plain_tcp_service_fails_the_handshake(http_peer):
    result = run("tls", tls_target(http_peer))

    assert (result.ok, result.error) == (False, phrases.TLS_FAILED)


# --- Certificates recorded by the other TLS-speaking kinds -------------------------------------


@pytest.mark.parametrize(
    ("kind", "path"),
    [("http", "/health"), ("http", "/status/204"), ("custom", "/health")],
)
def test_https_checks_record_the_certificate(valid_peer, authority, kind, path):
    """Read however short the body: aiohttp lets go of the connection at once."""
    config = {**trusting(authority), "expected_status": [204]} if "204" in path else None
    result = run(kind, valid_peer.url(path, scheme="https"), config or trusting(authority))

    assert result.ok, result
    assert result.certificate is not None
    assert result.certificate.issuer == "CN=healthmon test CA"


def test_a_failed_https_check_records_the_certificate_it_saw(valid_peer, authority):
    result = run("http", valid_peer.url("/status/503", scheme="https"), trusting(authority))

    assert (result.ok, result.error) == (False, "HTTP 503")
    assert result.certificate is not None


def test_plain_http_and_redis_record_no_certificate(http_peer):
    assert run("http", http_peer.url("/health")).certificate is None
    redis = run("redis", REDIS_URL)
    assert redis.ok, redis
    assert redis.certificate is None


def test_a_blocking_clients_handshake_in_a_worker_thread_is_noted(valid_peer):
    """PyMySQL shakes hands with `wrap_socket` in a thread of `ProbeContext.in_thread`."""

    def blocking_handshake() -> None:
        with socket.create_connection(("127.0.0.1", valid_peer.port), timeout=5) as sock:
            tls_context(verify=False).wrap_socket(sock, server_hostname="127.0.0.1").close()

    async def check():
        async with ProbeContext() as context:
            with handshakes() as noted:
                await context.in_thread(blocking_handshake)
            return last_certificate(noted)

    found = asyncio.run(check())

    assert found is not None
    assert found.issuer == "CN=healthmon test CA"


@pytest.mark.parametrize(
    ("kind", "target"),
    [
        ("websocket", "wss://127.0.0.1:{port}/health"),
        ("redis", "rediss://127.0.0.1:{port}/0"),
        ("grpc", "grpcs://127.0.0.1:{port}"),
    ],
)
def test_wss_rediss_and_grpcs_record_the_certificate_and_trust_the_private_ca(
    valid_peer, authority, kind, target
):
    """The peer speaks HTTP under its TLS, so each check fails after the handshake: the
    certificate it completed is recorded all the same, verified against the private CA."""
    result = run(kind, target.format(port=valid_peer.port), trusting(authority))

    assert not result.ok
    assert result.error not in (phrases.TLS_UNTRUSTED, phrases.TLS_FAILED), result
    assert result.certificate is not None, result
    assert result.certificate.issuer == "CN=healthmon test CA"

"""`custom` on a bare host:port that speaks first: SMTP is checked as SMTP, SSH, FTP, IMAP
and POP3 as `tcp` expecting their banner, and an unrecognized open port as plain `tcp`,
each recording what it saw."""

import pytest

from monitoring.probes.custom import _banner
from tests.monitoring.async_peers import (
    FTP_BANNER,
    IMAP_BANNER,
    POP3_BANNER,
    SMTP_BANNER,
    SSH_BANNER,
    BannerPeer,
)
from tests.monitoring.probing import run


@pytest.fixture(autouse=True)
def _allow_loopback(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True


@pytest.mark.parametrize(
    ("greeting", "name", "kind"),
    [
        (SMTP_BANNER, "SMTP", "smtp"),
        (b"220-mx.example.test ESMTP ready\r\n", "SMTP", "smtp"),
        (b"220 mail.example.test Microsoft SMTP Service ready\r\n", "SMTP", "smtp"),
        (SSH_BANNER, "SSH", "tcp"),
        (FTP_BANNER, "FTP", "tcp"),
        (b"220 ProFTPD Server (Debian) [::ffff:10.0.0.5]\r\n", "FTP", "tcp"),
        (IMAP_BANNER, "IMAP", "tcp"),
        (b"* PREAUTH IMAP4rev1 server logged in as x\r\n", "IMAP", "tcp"),
        (POP3_BANNER, "POP3", "tcp"),
        (b"421 mx.example.test ESMTP busy, try later\r\n", "SMTP", "smtp"),
    ],
)
def test_banners_are_named(greeting, name, kind):
    found = _banner(greeting, "mx.example.test:25")

    assert found is not None
    assert (found.kind, found.target) == (kind, f"{kind}://mx.example.test:25")
    assert found.seen == f"{name} banner: {greeting.decode().strip()}"


@pytest.mark.parametrize(
    "greeting", [b"", b"HELLO\r\n", b"220 welcome\r\n", b"+PONG\r\n", b"-ERR nope\r\n"]
)
def test_other_greetings_are_not_named(greeting):
    assert _banner(greeting, "host:1") is None


@pytest.mark.parametrize(
    ("name", "expect"),
    [("ssh", "SSH-"), ("ftp", "220"), ("imap", "* "), ("pop3", "+OK")],
)
def test_a_banner_without_a_kind_of_its_own_is_checked_as_tcp(banner_peers, name, expect):
    peer = banner_peers[name]
    greeting = peer.greeting.decode().strip()

    result = run("custom", peer.address)

    assert result.ok, result
    assert result.detected_type == "tcp"
    assert result.status_detail == f"{name.upper()} banner: {greeting} ({greeting})"
    assert greeting.startswith(expect)


def test_an_smtp_server_is_checked_as_smtp(smtp_peer):
    result = run("custom", smtp_peer.address)

    assert result.ok, result
    assert result.detected_type == "smtp"
    assert result.status_detail.startswith("SMTP banner: 220 mx.example.test")


def test_an_smtp_server_with_starttls_is_checked_with_its_certificate(smtp_starttls_peer):
    result = run("custom", smtp_starttls_peer.address, {"verify_tls": False})

    assert result.ok, result
    assert result.detected_type == "smtp"
    assert result.certificate is not None


def test_an_smtp_server_refusing_service_is_down_as_smtp():
    peer = BannerPeer(b"554 mx.example.test ESMTP not accepting mail\r\n")
    try:
        result = run("custom", peer.address)
    finally:
        peer.stop()

    assert (result.ok, result.error, result.detected_type) == (False, "SMTP 554", "smtp")
    assert result.error_detail == "greeting: 554 mx.example.test ESMTP not accepting mail"


def test_a_refusal_that_names_no_protocol_is_an_open_tcp_port(banner_peers):
    result = run("custom", banner_peers["smtp_refusal"].address)

    assert (result.ok, result.detected_type) == (True, "tcp")
    assert result.status_detail.startswith("protocol not recognized; it said: 554 5.7.1")


def test_a_pop3_greeting_is_not_taken_for_redis(banner_peers):
    result = run("custom", banner_peers["pop3"].address)

    assert result.detected_type == "tcp"


@pytest.mark.parametrize(
    ("scheme", "peer", "kind"),
    [("tcp", "silent_peer", "tcp"), ("smtp", "smtp_peer", "smtp")],
)
def test_the_new_schemes_name_their_kind(request, scheme, peer, kind):
    result = run("custom", request.getfixturevalue(peer).url(scheme))

    assert result.ok, result
    assert result.detected_type == kind


def test_another_service_taking_the_port_fails_once_then_is_detected_again():
    peer = BannerPeer(SSH_BANNER)
    try:
        assert run("custom", peer.address).detected_type == "tcp"
        peer.greeting = FTP_BANNER

        failed = run("custom", peer.address)
        again = run("custom", peer.address)
    finally:
        peer.stop()

    assert (failed.ok, failed.error) == (False, 'expected "SSH-" not received')
    assert failed.status_detail.startswith("SSH banner: ")
    assert again.ok, again
    assert again.status_detail.startswith("FTP banner: 220 (vsFTPd")

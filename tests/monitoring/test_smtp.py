"""The `smtp` kind against a real SMTP server (aiosmtpd) with and without STARTTLS, over
implicit TLS (smtps), and against servers answering 554, stalling or speaking another
protocol; its targets and options."""

import datetime
import time

import pytest

from healthmon.errors import InvalidInput
from monitoring.targets import TargetError, validate_target
from monitoring.validation import validate_config
from tests.monitoring.async_peers import SMTP_BANNER, BannerPeer
from tests.monitoring.probing import is_phrase, run

SHORT = 1.0  # for checks that must time out
NO_VERIFY = {"verify_tls": False}  # the test servers' certificates are self-signed


@pytest.fixture(autouse=True)
def _allow_loopback(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True


def assert_certificate_seen(result):
    assert result.certificate is not None
    assert result.certificate.subject == "CN=127.0.0.1"
    assert result.certificate.expires_at > datetime.datetime.now(datetime.UTC)


def test_a_server_without_starttls_is_up(smtp_peer):
    result = run("smtp", smtp_peer.url("smtp"))

    assert result.ok, result
    assert result.status_detail.startswith("220 mx.example.test")
    assert result.certificate is None


def test_starttls_is_used_when_offered(smtp_starttls_peer):
    result = run("smtp", smtp_starttls_peer.url("smtp"), NO_VERIFY)

    assert result.ok, result
    assert result.status_detail.endswith("; TLS")
    assert_certificate_seen(result)


def test_starttls_required_and_offered_is_up(smtp_starttls_peer):
    result = run("smtp", smtp_starttls_peer.url("smtp"), {**NO_VERIFY, "starttls": True})

    assert result.ok, result
    assert_certificate_seen(result)


def test_starttls_required_but_not_offered_is_down(smtp_peer):
    result = run("smtp", smtp_peer.url("smtp"), {"starttls": True})

    assert (result.ok, result.error) == (False, "STARTTLS not offered")
    assert result.error_detail.startswith("EHLO offered: ")
    assert "STARTTLS" not in result.error_detail.removeprefix("EHLO offered: ")


def test_an_untrusted_certificate_after_starttls_is_down(smtp_starttls_peer):
    result = run("smtp", smtp_starttls_peer.url("smtp"))

    assert (result.ok, result.error) == (False, "TLS certificate not trusted")
    assert "self-signed" in result.error_detail


def test_smtps_is_tls_from_the_first_byte(smtps_peer):
    result = run("smtp", smtps_peer.url("smtps"), NO_VERIFY)

    assert result.ok, result
    assert_certificate_seen(result)


def test_smtps_with_an_untrusted_certificate_is_down(smtps_peer):
    result = run("smtp", smtps_peer.url("smtps"))

    assert (result.ok, result.error) == (False, "TLS certificate not trusted")


def test_smtps_against_a_plain_smtp_server_is_down(smtp_peer):
    result = run("smtp", smtp_peer.url("smtps"), NO_VERIFY)

    assert (result.ok, result.error) == (False, "TLS handshake failed")


def test_a_554_greeting_is_down(banner_peers):
    result = run("smtp", banner_peers["smtp_refusal"].url("smtp"))

    assert (result.ok, result.error) == (False, "SMTP 554")
    assert is_phrase("smtp", result.error)
    assert result.error_detail == "greeting: 554 5.7.1 no service for you"


@pytest.mark.parametrize(
    ("replies", "error", "detail"),
    [
        pytest.param(
            (b"502 5.5.2 Error: command not recognized\r\n",),
            "SMTP 502",
            "EHLO: 502 5.5.2 Error: command not recognized",
            id="ehlo-refused",
        ),
        pytest.param(
            (
                b"250-mx.example.test\r\n250-SIZE 1000\r\n250 STARTTLS\r\n",
                b"454 4.7.0 TLS not available\r\n",
            ),
            "SMTP 454",
            "STARTTLS: 454 4.7.0 TLS not available",
            id="starttls-refused",
        ),
        pytest.param(
            (b"250-mx.example.test\r\n" * 101,),
            "protocol error",
            "a reply of more than 100 lines",
            id="endless-reply",
        ),
        pytest.param(
            (b"250 " + b"x" * 5000 + b"\r\n",),
            "protocol error",
            "a reply line longer than 4096 bytes",
            id="endless-line",
        ),
    ],
)
def test_a_server_failing_a_step_is_down(replies, error, detail):
    peer = BannerPeer(SMTP_BANNER, replies=replies)
    try:
        result = run("smtp", peer.url("smtp"))
    finally:
        peer.stop()

    assert (result.ok, result.error, result.error_detail) == (False, error, detail)
    assert is_phrase("smtp", result.error)


def test_another_protocol_is_down(banner_peers):
    result = run("smtp", banner_peers["ssh"].url("smtp"))

    assert (result.ok, result.error) == (False, "protocol error")
    assert result.error_detail.startswith("not an SMTP reply: SSH-2.0-")


def test_a_refused_port_is_down(closed_port):
    result = run("smtp", f"smtp://127.0.0.1:{closed_port}")

    assert (result.ok, result.error) == (False, "connection refused")


def test_a_server_hanging_up_is_down(hangup_peer):
    result = run("smtp", hangup_peer.url("smtp"))

    assert (result.ok, result.error) == (False, "connection closed")


def test_a_server_that_never_greets_times_out(silent_peer):
    started = time.monotonic()
    result = run("smtp", silent_peer.url("smtp"), timeout=SHORT)

    assert (result.ok, result.error) == (False, "timed out after 1 s")
    assert time.monotonic() - started < SHORT + 1


# --- Targets and options ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "target", ["smtp://mail.example.com", "smtp://mail.example.com:587", "smtps://mx.test:465/"]
)
def test_smtp_targets(target):
    assert validate_target("smtp", target) == target


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("smtp://user:pw@mail.example.com:587", "nothing after the port"),
        ("smtp://mail.example.com:587/inbox", "nothing after the port"),
        ("smtp://mail.example.com:99999", "between 1 and 65535"),
        ("mail.example.com:25", "smtp:// or smtps://"),
        ("tcp://mail.example.com:25", "smtp:// or smtps://"),
    ],
)
def test_bad_smtp_targets(target, message):
    with pytest.raises(TargetError, match=message):
        validate_target("smtp", target)


def test_smtp_options_and_defaults():
    assert validate_config("smtp", {}) == {
        "degraded_above_ms": None,
        "verify_tls": True,
        "certificate_expiry_days": [30, 14, 7, 1],
        "ca_certificate": "",
        "starttls": False,
    }
    with pytest.raises(InvalidInput) as refused:
        validate_config("smtp", {"starttls": "perhaps", "expect": "220"})
    assert set(refused.value.errors) == {"starttls", "expect"}

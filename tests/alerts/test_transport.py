"""The notifications' transport (urllib3 through the network policy): what a failed send is
recorded as (never the URL), certificates checked, no redirect followed, and a kept
connection reused only when its reply was read whole."""

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from alerts import transport
from tests.monitoring.peers import HOST, HTTPPeer, self_signed_context

pytestmark = pytest.mark.usefixtures("loopback_allowed")


@pytest.fixture
def silent() -> Iterator[str]:
    """A port that takes connections (the kernel's backlog) and never answers."""
    listener = socket.create_server((HOST, 0))
    yield f"http://{HOST}:{listener.getsockname()[1]}/hook?token=s3cret"
    listener.close()


@pytest.fixture
def closed() -> str:
    """A port nothing listens on."""
    with socket.create_server((HOST, 0)) as listener:
        port = listener.getsockname()[1]
    return f"http://{HOST}:{port}/hook?token=s3cret"


@pytest.fixture
def self_signed(tmp_path: Any) -> Iterator[HTTPPeer]:
    peer = HTTPPeer(self_signed_context(tmp_path))
    yield peer
    peer.stop()


def test_a_receiver_that_never_answers_times_out(silent):
    sent = transport.post_json(silent, b"{}", {}, 0.3)
    assert (sent.ok, sent.status_code, sent.error) == (False, None, "timed out")


def test_a_closed_port_is_a_refused_connection(closed):
    sent = transport.post_json(closed, b"{}", {}, 2)
    assert (sent.ok, sent.status_code, sent.error) == (False, None, "connection failed: refused")


def test_a_certificate_no_one_vouches_for_is_refused(self_signed):
    sent = transport.post_json(self_signed.url("/health", scheme="https"), b"{}", {}, 5)
    assert (sent.ok, sent.status_code) == (False, None)
    assert sent.error == "connection failed"


def test_a_name_that_does_not_resolve_is_said_so(monkeypatch):
    def unknown(*args: Any, **kwargs: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", unknown)  # no lookup leaves the machine
    sent = transport.post_json("http://receiver.example/hook?token=s3cret", b"{}", {}, 2)
    assert (sent.ok, sent.error) == (False, "connection failed: cannot resolve the host")


def test_an_address_the_policy_forbids_is_never_dialled(settings, silent):
    settings.PROBE_ALLOWED_NETWORKS = []
    sent = transport.post_json(silent, b"{}", {}, 2)
    assert (sent.ok, sent.error) == (False, "target address not allowed (network policy)")

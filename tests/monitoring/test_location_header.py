"""HTTP-family probes tell their target where they run from: `X-Healthmon-Location`."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from django.utils import timezone

from monitoring.checks import checks_probe
from monitoring.locations import LOCATION_HEADER


@pytest.fixture(autouse=True)
def _allow_loopback(settings):
    """Every peer is on 127.0.0.1, which the network policy refuses unless allowed."""
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True


def probe_once(endpoint, location=None, expected=None):
    [outcome] = checks_probe(
        slots=[(endpoint.pk, timezone.now())], location=location, expected=expected
    )
    return outcome


def echoed(slug):
    """What `/echo-headers` answers when the header arrived with this slug."""
    return f'"{LOCATION_HEADER.lower()}": "{slug}"'


def test_an_http_check_sends_the_location_it_runs_from(cast, make_endpoint, http_peer):
    endpoint = make_endpoint(
        cast.project,
        target=http_peer.url("/echo-headers"),
        config={"body_contains": echoed("eu-west")},
    )

    outcome = probe_once(endpoint, "eu-west", {endpoint.pk: 2})

    assert outcome.result.ok, outcome.result
    assert (outcome.location, outcome.expected) == ("eu-west", 2)


def test_the_default_location_sends_its_slug_and_stores_none(
    cast, make_endpoint, http_peer, settings
):
    settings.PROBE_DEFAULT_LOCATION = "home"
    endpoint = make_endpoint(
        cast.project,
        target=http_peer.url("/echo-headers"),
        config={"body_contains": echoed("home")},
    )

    outcome = probe_once(endpoint)

    assert outcome.result.ok, outcome.result
    assert (outcome.location, outcome.expected) == ("", 1)


def test_a_configured_header_of_that_name_cannot_claim_another_location(
    cast, make_endpoint, http_peer
):
    endpoint = make_endpoint(
        cast.project,
        target=http_peer.url("/echo-headers"),
        config={"headers": {"x-healthmon-location": "spoofed"}, "body_contains": "spoofed"},
    )

    outcome = probe_once(endpoint, "eu-west")

    assert not outcome.result.ok
    assert outcome.result.error == "unexpected body"


def test_a_graphql_check_sends_the_location(cast, make_endpoint, graphql_peer):
    query = f'{{ header(name: "{LOCATION_HEADER}") }}'
    endpoint = make_endpoint(
        cast.project, type="graphql", target=graphql_peer.url("/graphql"), config={"query": query}
    )

    assert probe_once(endpoint, "eu-west").result.ok


class _Recording(BaseHTTPRequestHandler):
    """Answers 200 to anything, noting the location header of every request."""

    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        self.seen.append(self.headers.get(LOCATION_HEADER))
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recording_peer():
    _Recording.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recording)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def test_a_custom_check_of_an_http_target_sends_the_location(cast, make_endpoint, recording_peer):
    target = f"http://127.0.0.1:{recording_peer.server_address[1]}/custom-health"
    endpoint = make_endpoint(cast.project, type="custom", target=target)

    outcome = probe_once(endpoint, "us-east")

    assert outcome.result.ok, outcome.result
    assert outcome.result.detected_type == "http"
    # the look at what the target speaks, then the HTTP check itself
    assert _Recording.seen == ["us-east", "us-east"]

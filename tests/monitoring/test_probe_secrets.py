"""A target's secrets in the forms probes send them (plain, percent-encoded, Basic base64,
config header values) never come back in what a check stores or shows, even from a peer
that quotes the `Authorization` header it received.

Each kind that sends userinfo runs against a real local peer that echoes what it got.
"""

import base64
from datetime import timedelta
from urllib.parse import quote

import pytest
from django.test import Client
from django.utils import timezone

from monitoring.models import CheckResult, Endpoint, Incident
from monitoring.probes import ProbeTask
from monitoring.probes.secrets import scrub, secrets_of
from tests.monitoring import probing
from tests.monitoring.peers import ECHO_AUTHORIZATION
from tests.monitoring.probing import TIMEOUT, run

USER = "probe"
# Characters a URL must percent-encode, so the encoded and the sent forms differ.
PASSWORD = "Zq8!x@y/7 kL:%e"
USERINFO = f"{USER}:{quote(PASSWORD, safe='')}"
TOKEN = "ghp_T0kenAsUserName42"
BEARER = "brr-H3ader-Secret-77"


@pytest.fixture(autouse=True)
def _allow_loopback(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True


def leaked(text, user=USER, secret=PASSWORD):
    return probing.leaked(text, user, secret)


def assert_masked(result, *, user=USER, secret=PASSWORD):
    assert not result.ok, result
    for text in (result.error, result.status_detail, result.error_detail):
        assert leaked(text, user, secret) == [], (text, leaked(text, user, secret))


# --- Every kind that sends userinfo, against a peer quoting its Authorization header -----------


def test_graphql_error_quoting_basic_credentials(graphql_peer):
    target = graphql_peer.url("/graphql").replace("://", f"://{USERINFO}@")

    result = run("graphql", target, {"query": "{ denied }"})

    assert result.error == "GraphQL error", result
    assert "auth=Basic ****" in result.error_detail, result  # the peer did quote it
    assert_masked(result)


def test_forms_sharing_a_start_are_each_masked_whole():
    # The Basic base64 of the percent-encoded password and of the plain one begin alike (up
    # to the first character encoded differently): masking that shared start as a cut-off
    # form of the one must not leave the rest of the other, which decodes to the password.
    task = ProbeTask("graphql", f"http://{USERINFO}@127.0.0.1/graphql", {}, TIMEOUT)
    header = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()

    shown = scrub(f"auth=Basic {header}", secrets_of(task))

    assert shown == "auth=Basic ****"


def test_elasticsearch_status_quoting_basic_credentials_cut_short(elasticsearch_peer):
    elasticsearch_peer.status = ECHO_AUTHORIZATION
    target = elasticsearch_peer.url().replace("://", f"://{USERINFO}@")

    result = run("elasticsearch", target)

    assert result.error == "unknown cluster status", result
    assert "Basic ****" in result.error_detail, result
    assert_masked(result)


def test_websocket_reply_quoting_basic_credentials_cut_short(websocket_auth_echo_peer):
    target = websocket_auth_echo_peer.url().replace("://", f"://{USERINFO}@")

    result = run("websocket", target, {"send": "who am I?", "expect": "nobody"})

    assert result.error == "unexpected reply", result
    assert result.status_detail.startswith("Basic ****"), result
    assert_masked(result)


def test_http_redirect_quoting_basic_credentials(http_peer):
    target = http_peer.url("/redirect-quoting-auth").replace("://", f"://{USERINFO}@")

    assert_masked(run("http", target))


def test_websocket_handshake_quoting_basic_credentials(websocket_auth_accept_peer):
    target = websocket_auth_accept_peer.url().replace("://", f"://{USERINFO}@")

    result = run("websocket", target)

    assert result.error == "handshake failed", result
    assert "Basic ****" in result.error_detail, result
    assert_masked(result)


@pytest.mark.parametrize("kind", ["graphql", "websocket"])
def test_custom_detected_kinds_quoting_basic_credentials(
    graphql_peer, websocket_auth_accept_peer, kind
):
    peer = websocket_auth_accept_peer if kind == "websocket" else graphql_peer
    url = peer.url() if kind == "websocket" else peer.url("/graphql-denied")
    target = url.replace("://", f"://{USERINFO}@")

    result = run("custom", target)

    assert result.detected_type == kind
    assert "Basic ****" in result.error_detail, result
    assert_masked(result)


def test_a_token_user_name_is_masked_in_its_basic_form(graphql_peer):
    target = graphql_peer.url("/graphql").replace("://", f"://{TOKEN}@")

    result = run("graphql", target, {"query": "{ denied }"})

    assert "auth=Basic ****" in result.error_detail, result
    for text in (result.error, result.error_detail):
        assert TOKEN not in text
        assert base64.b64encode(f"{TOKEN}:".encode()).decode()[:8] not in text


def test_a_secret_query_parameter_is_masked_as_the_client_encodes_it(graphql_peer):
    target = f"{graphql_peer.url('/graphql')}?api_token={quote(PASSWORD, safe='')}&env=prod"

    result = run("graphql", target, {"query": "{ denied }"})

    assert "/graphql?api_token=****&env=prod: auth=None" in result.error_detail, result
    assert_masked(result)


@pytest.mark.parametrize(
    "authorization",
    [
        f"Bearer {BEARER}",
        f"Basic {base64.b64encode(f'{USER}:{BEARER}'.encode()).decode()}",
    ],
)
def test_a_secret_config_header_is_masked_as_sent(graphql_peer, authorization):
    config = {"query": "{ denied }", "headers": {"Authorization": authorization}}

    result = run("graphql", graphql_peer.url("/graphql"), config)

    assert "auth=****" in result.error_detail, result
    assert BEARER not in result.error_detail
    assert_masked(result, secret=BEARER)


# --- Where checks are stored and shown ---------------------------------------------------------


def test_no_form_of_the_password_reaches_checks_incidents_or_pages(api, cast, graphql_peer):
    target = graphql_peer.url("/graphql").replace("://", f"://{USERINFO}@")
    body = {
        "project": str(cast.project.id),
        "name": "Gateway",
        "type": "graphql",
        "target": target,
        "config": {"query": "{ denied }"},
        "failure_threshold": 1,
    }
    created = api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")
    assert created.status_code == 201, created.content
    pk = created.json()["id"]

    assert api.post(f"/api/v1/endpoints/{pk}/check-now").status_code == 202

    check, incident = CheckResult.objects.get(), Incident.objects.get()
    assert check.error == "GraphQL error"
    assert "auth=Basic ****" in check.error_detail  # the probe ran and the peer quoted it
    browser = Client()
    browser.force_login(cast.owner)
    since = (timezone.now() - timedelta(hours=1)).isoformat()
    shown = [
        check.error,
        check.error_detail,
        incident.cause,
        Endpoint.objects.get().streak_error,
        api.get(f"/api/v1/endpoints/{pk}/checks", {"from": since}).content.decode(),
        api.get("/api/v1/incidents").content.decode(),
        api.get(f"/api/v1/incidents/{incident.pk}").content.decode(),
        api.get(f"/api/v1/endpoints/{pk}").content.decode(),
        browser.get("/").content.decode(),
        browser.get(f"/endpoints/{pk}").content.decode(),
    ]
    for text in shown:
        assert leaked(text) == [], text

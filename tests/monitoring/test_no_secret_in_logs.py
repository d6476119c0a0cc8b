"""No secret is ever logged (issue 19, item 5): the API flows run with known passwords, an
API key, JWTs, a target's password and Authorization header, a webhook's secret and URL
token, and a check failing against a peer that quotes the credentials it got; every record
logged (at DEBUG, on the root) and every rendered line is scanned for each secret in its
plain, percent-encoded and base64 forms."""

import base64
import logging
from urllib.parse import quote, quote_plus

import pytest

from alerts.models import Delivery
from monitoring.models import CheckResult
from tests.alerts.receiver import Receiver
from tests.logs import rendered_lines

pytestmark = pytest.mark.django_db

PASSWORD = "Log-Sekret-Pass-9141"
WRONG_PASSWORD = "Wrong-Guess-Pass-5523"
TARGET_USER = "probe"
TARGET_PASSWORD = "Tgt!pw@z/7 Q:%x"
HEADER_SECRET = "hdr-Bearer-Secret-6620"


def forms(secret: str, user: str = "") -> set[str]:
    """The forms a secret may be written in: plain, percent-encoded, base64 (alone and as
    the `user:secret` of a Basic header, cut where the secret's first characters show)."""
    found = {secret, quote(secret), quote(secret, safe=""), quote_plus(secret)}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        found.add(encode(secret.encode()).decode().rstrip("="))
        if user:
            whole = encode(f"{user}:{secret}".encode()).decode()
            shown = len(encode(f"{user}:".encode()).decode().rstrip("="))
            found.add(whole[: shown + 2])
    return found


def _run_flows(api, graphql_peer, receiver) -> dict[str, str]:
    """Every flow that handles a secret; returns the secrets it used, by name."""
    email = "ops@logs.test"
    body = {"email": email, "password": PASSWORD, "organization_name": "Logs Ltd"}
    registered = api.post("/api/v1/auth/register", body, format="json")
    assert registered.status_code == 201, registered.content
    wrong = {"email": email, "password": WRONG_PASSWORD}
    assert api.post("/api/v1/auth/login", wrong, format="json").status_code == 401
    login = api.post("/api/v1/auth/login", {"email": email, "password": PASSWORD}, format="json")
    jwt = login.json()["token"]
    project = registered.json()["project"]["id"]

    api.credentials(HTTP_AUTHORIZATION=f"Bearer {jwt}")
    created_key = api.post("/api/v1/api-keys", {"name": "ci", "scopes": ["admin"]}, format="json")
    assert created_key.status_code == 201, created_key.content
    key = created_key.json()["key"]
    channel = api.post(
        "/api/v1/notification-channels",
        {"name": "Hook", "kind": "webhook", "config": {"url": receiver.url}},
        format="json",
    )
    assert channel.status_code == 201, channel.content
    target = graphql_peer.url("/graphql").replace(
        "://", f"://{TARGET_USER}:{quote(TARGET_PASSWORD, safe='')}@"
    )
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    # The password in the target; the header secret in the config (one endpoint can't have
    # both: the client refuses an Authorization header next to userinfo).
    for name, url, config in (
        ("Gateway", target, {"query": "{ denied }"}),
        (
            "Gateway with a header",
            graphql_peer.url("/graphql"),
            {"query": "{ denied }", "headers": {"Authorization": f"Bearer {HEADER_SECRET}"}},
        ),
    ):
        body = {"project": project, "name": name, "type": "graphql", "target": url}
        created = api.post(
            "/api/v1/endpoints", {**body, "config": config, "failure_threshold": 1}, format="json"
        )
        assert created.status_code == 201, created.content
        assert api.post(f"/api/v1/endpoints/{created.json()['id']}/check-now").status_code == 202

    # Refused credentials: a tampered JWT, then the key once revoked.
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {jwt[:-4]}AAAA")
    assert api.get("/api/v1/endpoints").status_code == 401
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {jwt}")
    assert api.delete(f"/api/v1/api-keys/{created_key.json()['id']}").status_code == 204
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert api.get("/api/v1/endpoints").status_code == 401
    return {
        "password": PASSWORD,
        "wrong password": WRONG_PASSWORD,
        "JWT": jwt,
        "JWT signature": jwt.rsplit(".", 1)[1],
        "API key": key,
        "header secret": HEADER_SECRET,
        "webhook secret": channel.json()["secret"],
        "webhook URL token": "SECRET-PATH",
    }


def test_no_secret_in_any_form_reaches_a_log_line(api, graphql_peer, settings, caplog):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    caplog.set_level(logging.DEBUG)  # on the root: every logger's records
    peer = Receiver((500, 500))
    try:
        with rendered_lines(level=logging.DEBUG) as lines:
            secrets = _run_flows(api, graphql_peer, peer)
    finally:
        peer.stop()

    # The flows did what they are here for: the peer quoted the header, the webhook was sent.
    errors = sorted(CheckResult.objects.values_list("error_detail", flat=True))
    assert any("auth=Basic ****" in error for error in errors), errors
    assert any("auth=****" in error for error in errors), errors
    assert [d.attempts for d in Delivery.objects.all()] == [1, 1]
    assert peer.requests
    events = {line.get("event") for line in lines.all()}
    assert {"auth_failed", "check_failed", "incident_opened", "delivery_attempt"} <= events
    assert len(lines.events("auth_failed")) == 3

    captured = [lines.text(), caplog.text]
    for record in caplog.records:
        captured += [str(record.msg), repr(record.args), record.exc_text or ""]
    text = "\n".join(captured)
    checks = {name: forms(secret) for name, secret in secrets.items()}
    checks["target password"] = forms(TARGET_PASSWORD, user=TARGET_USER)
    leaks = {name: [f for f in found if f in text] for name, found in checks.items()}
    assert {name: found for name, found in leaks.items() if found} == {}

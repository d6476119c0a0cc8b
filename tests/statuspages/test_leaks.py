"""Nothing private on a public route: endpoints whose targets, configs and errors hold
hosts, ports and secrets, an incident with internal notes and a hidden one, members and
subscribers with emails; then every public route of the page (HTML, summary.json, feeds,
badges, its custom domain and its feeds, the subscribe answer, the confirm and unsubscribe
pages a subscriber's mail links to, a password page's form) is read and scanned for any of
it."""

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from monitoring.models import CheckResult, Endpoint, Location
from statuspages.models import StatusPage, Subscriber

TARGET_SECRET = "tgt-Pw-9931"
QUERY_SECRET = "qs-S3cr3t-77"
HEADER_SECRET = "hdr-S3cr3t-42"
PG_SECRET = "pg-Pw-5521"
HOSTS = ["billing-db.internal.example", "10.20.30.40", "cache.internal.example"]
PORTS = [":8443", ":6543", "11211"]
ERRORS = ["password authentication failed", "svc_admin", "ECONNRESET by peer"]
NOTE = "rotate-the-billing-creds-now"
HIDDEN_TITLE = "Hidden-incident-title-xyz"
SUBSCRIBER = "reader@customer.example"
DOMAIN = "status.acme.example"
# Where checks ran from: status pages show the overall state only, never a place.
LOCATION_SLUG, LOCATION_NAME = "probe-zq-frankfurt", "Rack-Zq-Frankfurt"


@pytest.fixture
def world(api: Any, cast: Any, make_endpoint: Any, record: Any, settings: Any) -> dict[str, Any]:
    """A public page over endpoints full of secrets, and a password page beside it."""
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    cast.project.name = "Internal-project-name-q7"
    cast.project.save(update_fields=["name"])
    billing = make_endpoint(
        cast.project,
        name="Billing",
        failure_threshold=1,
        target=f"https://svc_user:{TARGET_SECRET}@billing-db.internal.example:8443/h?token={QUERY_SECRET}",
        config={"headers": {"Authorization": f"Bearer {HEADER_SECRET}"}},
    )
    database = make_endpoint(
        cast.project,
        name="Database",
        type="postgresql",
        failure_threshold=1,
        target=f"postgresql://pg_admin:{PG_SECRET}@10.20.30.40:6543/prod",
    )
    cache = make_endpoint(
        cast.project, name="Cache", type="tcp", target="tcp://cache.internal.example:11211"
    )
    job = make_endpoint(cast.project, name="Nightly job", type="heartbeat", target="")
    now = timezone.now()
    start = now + timedelta(seconds=1)  # after the endpoints were made: such checks count
    error = "FATAL: password authentication failed for user svc_admin at 10.20.30.40:6543"
    record(billing, [(start, True, 20.0), (start + timedelta(minutes=1), False, 0.0, error)])
    record(database, [(start, False, 0.0, "ECONNRESET by peer 10.20.30.40:6543")])
    record(cache, [(start, True, 3.0)])
    Location.objects.create(slug=LOCATION_SLUG, name=LOCATION_NAME)
    Endpoint.objects.filter(pk=billing.pk).update(locations=["default", LOCATION_SLUG])
    place = f"{LOCATION_SLUG}: Connection refused"
    CheckResult.objects.create(
        endpoint=billing,
        scheduled_for=start + timedelta(seconds=30),
        checked_at=start + timedelta(seconds=30),
        ok=False,
        error="Connection refused",
        location=LOCATION_SLUG,
    )
    # A degraded round's reason and a streak naming the failing place.
    change = cache.move_to("degraded", start + timedelta(seconds=40), place)
    assert change is not None
    change.save()
    Endpoint.objects.filter(pk=cache.pk).update(status="degraded", streak_error=place)

    owner = api.as_user(cast.owner)
    sections = [
        {"name": "Payments", "endpoints": [str(billing.pk), str(database.pk)]},
        {"name": "Platform", "endpoints": [str(cache.pk), str(job.pk)]},
    ]
    body = {
        "name": "Acme status",
        "slug": "acme",
        "title": "Acme",
        "description": "Live status of Acme",
        "visibility": "public",
        "custom_domain": DOMAIN,
        "show_response_times": True,
        "sections": sections,
    }
    created = owner.post("/api/v1/status-pages", body, format="json")
    assert created.status_code == 201, created.content
    locked = owner.post(
        "/api/v1/status-pages",
        {
            **body,
            "slug": "acme-locked",
            "custom_domain": None,
            "visibility": "password",
            "password": "page-Pw-1234",
        },
        format="json",
    )
    assert locked.status_code == 201, locked.content

    incident = billing.incidents.get()
    assert owner.post(
        f"/api/v1/incidents/{incident.pk}/updates",
        {"status": "identified", "message": "A fix is rolling out.", "notify_subscribers": True},
        format="json",
    ).status_code in (200, 201)
    assert owner.post(
        f"/api/v1/incidents/{incident.pk}/notes", {"text": NOTE}, format="json"
    ).status_code in (200, 201)
    declared = owner.post(
        "/api/v1/incidents",
        {
            "title": HIDDEN_TITLE,
            "endpoints": [str(cache.pk)],
            "impact": "partial_outage",
            "message": "hidden words",
            "public": False,
        },
        format="json",
    )
    assert declared.status_code == 201, declared.content
    Client().post("/status/acme/subscribe", {"email": SUBSCRIBER})
    return {
        "page": StatusPage.objects.get(slug="acme"),
        "endpoints": [billing, database, cache, job],
    }


def public_answers(world: dict[str, Any]) -> list[tuple[str, Any]]:
    """(what, response) of every public route of the page, read anonymously."""
    client = Client()
    page: StatusPage = world["page"]
    paths = [
        "/status/acme",
        "/status/acme/summary.json",
        "/status/acme/history.atom",
        "/status/acme/history.rss",
        "/status/acme-locked",
        "/status/acme-locked/unlock",
    ]
    keys = [page.badge_key, *(e.badge_key for e in world["endpoints"])]
    for key in keys:
        for kind in ("status", "uptime", "response-time"):
            paths += [f"/badge/{key}/{kind}.svg", f"/badge/{key}/{kind}.json"]
    answers = [(path, client.get(path, follow=True)) for path in paths]
    domain = Client(HTTP_HOST=DOMAIN)
    feeds = ("/", "/summary.json", "/history.atom", "/history.rss")
    answers += [(f"{DOMAIN}{p}", domain.get(p)) for p in feeds]
    answers.append(("subscribe", client.post("/status/acme/subscribe", {"email": SUBSCRIBER})))
    # The pages a subscriber's mail links to, on the app and on the domain: the forms, then
    # what confirming and unsubscribing answer, then a link that no longer works.
    token = Subscriber.objects.get(page=page, email=SUBSCRIBER).token
    for where, reader, prefix in (("", client, "/status/acme"), (DOMAIN, domain, "")):
        for route in ("confirm", "unsubscribe"):
            path = f"{prefix}/{route}/{token}"
            answers.append((f"{where}{prefix}/{route} form", reader.get(path)))
    answers.append(("/status/acme/confirm done", client.post(f"/status/acme/confirm/{token}")))
    answers.append(
        ("/status/acme/unsubscribe done", client.post(f"/status/acme/unsubscribe/{token}"))
    )
    answers.append(("/status/acme/confirm gone", client.get(f"/status/acme/confirm/{token}")))
    return answers


def test_no_public_route_shows_a_target_secret_error_note_or_email(world, cast):
    endpoints: list[Endpoint] = world["endpoints"]
    job = endpoints[3]
    forbidden = [
        TARGET_SECRET,
        QUERY_SECRET,
        HEADER_SECRET,
        PG_SECRET,
        *HOSTS,
        *PORTS,
        *ERRORS,
        "connection refused",
        NOTE,
        HIDDEN_TITLE,
        "hidden words",
        SUBSCRIBER,
        *(u.email for u in (cast.owner, cast.admin, cast.member, cast.outsider)),
        str(job.ping_key),
        cast.project.ping_key,
        cast.project.name,
        *(str(e.pk) for e in endpoints),
        LOCATION_SLUG,
        LOCATION_NAME,
    ]
    answers = public_answers(world)

    for what, response in answers:
        assert response.status_code < 500, what
        # Every header but the ETag, a hash of the body whose hex digits may spell a port.
        headers = "".join(f"{k}: {v}\n" for k, v in response.items() if k != "ETag")
        text = response.content.decode() + headers
        found = [secret for secret in forbidden if secret.lower() in text.lower()]
        if what == "subscribe":  # the answer may say back the address its reader typed
            found = [secret for secret in found if secret != SUBSCRIBER]
        assert found == [], what
    shown = {what for what, r in answers if r.status_code == 200}
    assert {
        "/status/acme",
        "/status/acme/summary.json",
        "/status/acme/history.atom",
        "/status/acme/history.rss",
        f"{DOMAIN}/history.atom",
        f"{DOMAIN}/history.rss",
        "/status/acme/confirm form",
        "/status/acme/unsubscribe form",
        f"{DOMAIN}/confirm form",
        f"{DOMAIN}/unsubscribe form",
        "/status/acme/confirm done",
        "/status/acme/unsubscribe done",
    } <= shown
    assert not Subscriber.objects.filter(email=SUBSCRIBER).exists()  # unsubscribed indeed
    for what in ("/status/acme", f"{DOMAIN}/history.atom", f"{DOMAIN}/history.rss"):
        assert "A fix is rolling out." in dict(answers)[what].content.decode(), what


def test_a_private_page_and_an_unknown_slug_answer_the_same_404(world, api, cast):
    page: StatusPage = world["page"]
    api.as_user(cast.owner).patch(
        f"/api/v1/status-pages/{page.pk}", {"visibility": "private"}, format="json"
    )
    client = Client()
    private, unknown = client.get("/status/acme"), client.get("/status/no-such-page")

    assert private.status_code == unknown.status_code == 404
    assert private.content == unknown.content
    for suffix in ("summary.json", "history.atom", "history.rss"):
        assert client.get(f"/status/acme/{suffix}").status_code == 404

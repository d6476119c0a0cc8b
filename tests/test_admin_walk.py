"""Every Django admin page of the project's models opens for a superuser, shows no secret and
costs the same number of queries however many rows it lists; the admin actions work."""

import uuid
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.messages import get_messages
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts.admin import UserAdmin
from accounts.models import Invitation, Organization, Project, ProjectAccess, Role, User
from accounts.services import invitation_create, organization_create
from alerts.admin import EscalationPolicyAdmin
from alerts.escalation_validation import StepInput
from alerts.models import (
    Delivery,
    DeliveryAttempt,
    Escalation,
    EscalationStep,
    MaintenanceWindow,
    NotificationChannel,
)
from alerts.services import channel_create, escalation_policy_create, maintenance_window_save
from analytics.services import rollups_fold
from apikeys.models import ApiKey
from apikeys.services import api_key_create
from monitoring.acknowledgement import incident_acknowledge
from monitoring.admin import LocationAdmin
from monitoring.checks import CheckOutcome
from monitoring.models import (
    AckVia,
    CheckResult,
    Endpoint,
    Heartbeat,
    Incident,
    IncidentNote,
    IncidentUpdate,
    Location,
    LocationOutage,
    LocationWorker,
    PendingRound,
    StatusChange,
)
from monitoring.probes import ProbeResult
from monitoring.services import endpoint_create
from monitoring.validation import validate_config
from pipeline.checks import checks_record
from pipeline.heartbeats import PingIn, ping_record
from statuspages.admin import StatusPageAdmin
from statuspages.models import (
    Component,
    MaintenanceNotice,
    Section,
    StatusPage,
    Subscriber,
    SubscriberMail,
)
from statuspages.services import status_page_create
from statuspages.validation import PageInput, SectionIn
from tests.helpers import PASSWORD, accept_invite, admin_url, mailed_token

APPS = ("accounts", "apikeys", "monitoring", "alerts", "analytics", "statuspages")
MODELS = [model for model in admin.site._registry if model._meta.app_label in APPS]
TARGET_PASSWORD = "s3cret-pass"
HEADER_SECRET = "hdr-s3cret-77"
SLACK_SECRET = "SLACKSECRETPART"
WEBHOOK_SECRET = "whk-path-s3cret"


def record_checks(endpoint: Endpoint, results: list[bool], start: Any = None) -> None:
    """Store one check a minute (after the endpoint's creation, so that they count)."""
    start = start or timezone.now()
    outcomes = [
        CheckOutcome(
            endpoint.pk,
            start + timedelta(minutes=i),
            start + timedelta(minutes=i),
            ProbeResult(ok, 12.5, "HTTP 200" if ok else "", "" if ok else "connection refused"),
        )
        for i, ok in enumerate(results)
    ]
    checks_record(outcomes=outcomes)


def build_organization(n: int) -> dict[str, Any]:
    """An organization with a row of every admin model (checks, incidents, status changes and
    rollups from `checks_record`); returns its clear API key and its users."""
    org, project = organization_create(name=f"Org {n}")
    owner = User.objects.create_user(
        f"owner{n}@org{n}.test", PASSWORD, organization=org, role=Role.OWNER
    )
    member = User.objects.create_user(f"member{n}@org{n}.test", PASSWORD, organization=org)
    member.projects.set([project])
    invitation_create(inviter=owner, email=f"invitee{n}@org{n}.test", role="member", projects=[])
    _, key = api_key_create(creator=owner, name=f"key {n}", scopes=["admin"], expires_at=None)
    config = {"headers": {"Authorization": f"Bearer {HEADER_SECRET}"}}
    site = endpoint_create(
        project=project,
        name=f"Site {n}",
        type="http",
        target=f"https://user:{TARGET_PASSWORD}@example.com/health",
        config=validate_config("http", config),
        interval_seconds=60,
        timeout_seconds=10,
    )
    record_checks(site, [True, False, False])
    add_alerts(org, project, site, n)
    add_status_page(org, site, n)
    add_escalation(org, project, site, n)
    return {"key": key, "users": [owner, member]}


def add_heartbeat(project: Project, n: int) -> None:
    """A heartbeat endpoint with a failure ping (a ping, a check and an incident)."""
    job = endpoint_create(
        project=project,
        name=f"Job {n}",
        type="heartbeat",
        target="",
        config=validate_config("heartbeat", {}),
        failure_threshold=1,
    )
    assert job.ping_key is not None
    ping_record(
        ping=PingIn(
            ping_key=job.ping_key,
            kind="fail",
            exit_status=3,
            received_at=timezone.now(),
            rid=None,
            client_ip="192.0.2.1",
            method="POST",
            user_agent="cron",
            body="backup failed",
            body_size=13,
            body_truncated=False,
        )
    )


def add_alerts(org: Organization, project: Project, site: Endpoint, n: int) -> None:
    """Channels (made after the checks: no delivery is sent), a delivery with its attempt
    and a maintenance window."""
    slack = channel_create(
        organization=org,
        name=f"Slack {n}",
        kind="slack",
        config={"url": f"https://hooks.slack.com/services/T000/B000/{SLACK_SECRET}{n}"},
        projects=[project],
    )
    channel_create(
        organization=org,
        name=f"Hook {n}",
        kind="webhook",
        config={"url": f"https://hooks.example.com/{WEBHOOK_SECRET}?token={WEBHOOK_SECRET}"},
        endpoints=[site],
    )
    delivery = Delivery.objects.create(
        channel=slack,
        event="incident.opened",
        event_id=uuid.uuid4(),
        incident=Incident.objects.filter(endpoint=site).first(),
        occurred_at=timezone.now(),
        status="failed",
        attempts=1,
        last_error="HTTP 500",
    )
    DeliveryAttempt.objects.create(
        delivery=delivery,
        attempted_at=timezone.now(),
        ok=False,
        status_code=500,
        error="HTTP 500",
        duration_ms=12.5,
    )
    start = timezone.now() + timedelta(days=1)
    maintenance_window_save(
        window=MaintenanceWindow(organization=org),
        name=f"Upgrade {n}",
        starts_at=start,
        ends_at=start + timedelta(hours=1),
        recurrence="weekly",
        projects=[project],
        endpoints=[site],
    )


PAGE_PASSWORD = "page-s3cret-pw"


def add_status_page(org: Organization, site: Endpoint, n: int) -> None:
    """A password status page showing the site, a confirmed subscriber mailed an update
    and the notice of the organization's maintenance window, and an internal note on the
    site's incident."""
    page = status_page_create(
        organization=org,
        data=PageInput(
            name=f"Status {n}",
            slug=f"status-{n}",
            title="",
            description="",
            visibility="password",
            password=PAGE_PASSWORD,
            custom_domain=None,
            uptime_days=90,
            show_response_times=False,
            sections=(SectionIn(name="Core", endpoints=(site,)),),
        ),
    )
    subscriber = Subscriber.objects.create(
        page=page, email=f"reader{n}@example.net", confirmed_at=timezone.now()
    )
    incident = Incident.objects.get(endpoint=site)
    update = IncidentUpdate.objects.create(
        incident=incident, state="identified", message="A *fix* is rolling out."
    )
    SubscriberMail.objects.create(subscriber=subscriber, update=update, sent_at=timezone.now())
    window = MaintenanceWindow.objects.get(organization=org)
    MaintenanceNotice.objects.create(window=window)
    SubscriberMail.objects.create(subscriber=subscriber, maintenance=window, sent_at=timezone.now())
    IncidentNote.objects.create(incident=incident, text="internal: the db host is flaky")
    incident_acknowledge(incident=incident, by=None, via=AckVia.LINK)


@pytest.fixture
def world(superuser, django_capture_on_commit_callbacks, outbox):
    """Two organizations with every kind of record; the secrets no page may show."""
    with django_capture_on_commit_callbacks(execute=True):
        built = [build_organization(n) for n in (1, 2)]
        for n, project in enumerate(Project.objects.filter(organization__name__startswith="Org ")):
            add_heartbeat(project, n)
    Heartbeat.beat("dispatcher", timezone.now())  # the dispatcher's, shared by every organization
    rollups_fold()  # the fold's watermark, shared too
    # Probe locations are the service's, shared too: one with a worker, an outage, a round.
    now = timezone.now()
    place = Location.objects.create(slug="eu-west", name="Europe (west)", last_seen_at=now)
    LocationWorker.objects.create(location=place, hostname="probe-1.example", last_seen_at=now)
    LocationOutage.objects.create(location=place, started_at=now, resolved_at=now)
    PendingRound.objects.create(
        endpoint=Endpoint.objects.exclude(type="heartbeat").first(),
        scheduled_for=now,
        expected=2,
        judge_at=now,
    )
    tokens = [mailed_token(message, "/accept-invite") for message in outbox]
    keys = [b["key"] for b in built]
    users = [superuser, *(u for b in built for u in b["users"])]
    return [
        TARGET_PASSWORD,
        HEADER_SECRET,
        SLACK_SECRET,
        WEBHOOK_SECRET,
        *(channel.secret for channel in NotificationChannel.objects.all() if channel.secret),
        *keys,
        *(key[-38:] for key in keys),  # the secret part and checksum, after the public prefix
        *ApiKey.objects.values_list("digest", flat=True),
        *tokens,
        *Invitation.objects.values_list("token_hash", flat=True),
        PAGE_PASSWORD,
        *StatusPage.objects.exclude(password_hash="").values_list("password_hash", flat=True),
        *Subscriber.objects.values_list("token", flat=True),
        *(user.password for user in users),
        *(user.password.rsplit("$", 1)[-1] for user in users),  # salt and checksum
    ]


def test_every_model_of_the_project_is_in_the_admin():
    concrete = {model for app in APPS for model in apps.get_app_config(app).get_models()}

    # A member's project grants are edited inline on the user's page, a status page's
    # sections and components on the page's, a policy's steps on the policy's, a location's
    # workers on the location's: rows with no
    # life of their own.
    assert concrete - set(MODELS) == {
        ProjectAccess,
        Section,
        Component,
        EscalationStep,
        LocationWorker,
    }
    assert EscalationStep in {inline.model for inline in EscalationPolicyAdmin.inlines}
    assert LocationWorker in {inline.model for inline in LocationAdmin.inlines}
    assert ProjectAccess in {inline.model for inline in UserAdmin.inlines}
    assert {Section, Component} <= {inline.model for inline in StatusPageAdmin.inlines}


def changelist_urls(client: Any, model: Any) -> list[str]:
    """The list, a search, each filter's first choice and the date hierarchy's year."""
    url = admin_url(model, "changelist")
    listed = client.get(url)
    assert listed.status_code == 200, url
    cl = listed.context["cl"]
    urls = [url, f"{url}?q=x"]
    for spec in cl.filter_specs:
        choice = next(c for c in spec.choices(cl) if not c["selected"])
        urls.append(url + choice["query_string"])
    if cl.date_hierarchy:
        urls.append(f"{url}?{cl.date_hierarchy}__year={timezone.now().year}")
    return urls


def object_urls(model: Any, model_admin: Any, request: Any) -> list[str]:
    """The change (or view), history and delete pages of a few objects."""
    urls = []
    for obj in model._default_manager.all()[:5]:
        urls += [admin_url(model, "change", obj.pk), admin_url(model, "history", obj.pk)]
        if model_admin.has_delete_permission(request, obj):
            urls.append(admin_url(model, "delete", obj.pk))
        if model is User:
            urls.append(reverse("admin:auth_user_password_change", args=[obj.pk]))
    return urls


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m._meta.label)
def test_every_admin_page_opens_and_shows_no_secret(staff_client, superuser, world, model):
    model_admin = admin.site._registry[model]
    request = RequestFactory().get("/")
    request.user = superuser
    assert model._default_manager.exists()

    urls = changelist_urls(staff_client, model) + object_urls(model, model_admin, request)
    add = staff_client.get(admin_url(model, "add"))

    assert add.status_code == (200 if model_admin.has_add_permission(request) else 403)
    for url in urls:
        page = staff_client.get(url)
        assert page.status_code == 200, url
        text = page.content.decode()
        leaked = [secret for secret in world if secret in text]
        assert leaked == [], url


def query_counts(client: Any) -> dict[str, int]:
    counts = {}
    for model in MODELS:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(admin_url(model, "changelist")).status_code == 200
        counts[model._meta.label] = len(queries)
    return counts


def test_changelist_queries_do_not_grow_with_rows(staff_client):
    for n in range(3):
        build_organization(n)
    few = query_counts(staff_client)
    for n in range(3, 30):
        build_organization(n)

    many = query_counts(staff_client)

    assert many == few
    assert CheckResult.objects.count() == 90


def test_endpoint_page_lists_its_latest_checks_at_a_fixed_cost(staff_client, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    url = admin_url(Endpoint, "change", endpoint.pk)
    record_checks(endpoint, [True] * 3)
    staff_client.get(url)  # the first page of a session also fills caches (content types)
    with CaptureQueriesContext(connection) as few:
        staff_client.get(url)
    record_checks(endpoint, [False] * 30, start=timezone.now() + timedelta(hours=1))

    with CaptureQueriesContext(connection) as many:
        page = staff_client.get(url)

    assert len(many) == len(few)
    checks, incidents = (inline.formset for inline in page.context["inline_admin_formsets"])
    newest = CheckResult.objects.filter(endpoint=endpoint)[:20]
    assert list(checks.get_queryset()) == list(newest)
    assert [incident.cause for incident in incidents.get_queryset()] == ["connection refused"]


class FormFields(HTMLParser):
    """The values a browser submits from a page's form fields."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.data: dict[str, str] = {}
        self._select: str | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        name, kind = found.get("name"), found.get("type")
        if tag == "input" and name and kind not in {"submit", "button", "checkbox"}:
            self.data[name] = found.get("value") or ""
        elif tag == "input" and name and kind == "checkbox" and "checked" in found:
            self.data[name] = found.get("value") or "on"
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select and "selected" in found:
            self.data[self._select] = found.get("value") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None


def test_an_endpoint_saved_from_its_page_keeps_its_target_and_history(
    staff_client, cast, make_endpoint
):
    target = f"https://user:{TARGET_PASSWORD}@example.com/health"
    endpoint = make_endpoint(cast.project, target=target)
    record_checks(endpoint, [True, False, False])
    url = admin_url(Endpoint, "change", endpoint.pk)
    form = FormFields(staff_client.get(url).content.decode()).data
    assert form["checks-TOTAL_FORMS"] == "3"

    response = staff_client.post(
        url, {**form, "name": "Renamed", "interval_seconds": "300", "target": "https://x.test"}
    )

    assert response.status_code == 302, response.content.decode()[-3000:]
    saved = Endpoint.objects.get()
    assert (saved.name, saved.interval_seconds, saved.target) == ("Renamed", 300, target)
    assert saved.next_check_at is not None
    assert CheckResult.objects.count() == 3
    assert Incident.objects.get().resolved_at is None


def post_action(client: Any, model: Any, action: str, objects: list[Any]) -> Any:
    return client.post(
        admin_url(model, "changelist"),
        {"action": action, "_selected_action": [obj.pk for obj in objects]},
        follow=True,
    )


def test_pause_and_resume_go_through_the_endpoint_service(staff_client, cast, make_endpoint):
    down = make_endpoint(cast.project, name="Down")
    record_checks(down, [False, False])
    untouched = make_endpoint(cast.project, name="Other")

    paused = post_action(staff_client, Endpoint, "pause", [down])

    assert "Paused 1 endpoint(s)." in [str(m) for m in get_messages(paused.wsgi_request)]
    down.refresh_from_db()
    assert (down.enabled, down.status, down.next_check_at) == (False, "paused", None)
    assert Incident.objects.get().resolved_at is not None  # nobody knows how long it stayed down
    assert StatusChange.objects.filter(endpoint=down, to_status="paused").count() == 1
    assert Endpoint.objects.get(pk=untouched.pk).enabled

    post_action(staff_client, Endpoint, "resume", [down])

    down.refresh_from_db()
    assert (down.enabled, down.status) == (True, "pending")
    assert down.next_check_at is not None
    assert StatusChange.objects.filter(endpoint=down, to_status="pending").count() == 1


def test_revoke_revokes_the_selected_keys_only(staff_client, api, cast, make_key):
    revoked_key, kept_key = make_key(cast.owner), make_key(cast.owner)
    revoked, kept = (ApiKey.objects.get(prefix=k[:16]) for k in (revoked_key, kept_key))

    response = post_action(staff_client, ApiKey, "revoke", [revoked])

    assert "Revoked 1 API key(s)." in [str(m) for m in get_messages(response.wsgi_request)]
    assert api.with_key(revoked_key).get("/api/v1/endpoints").status_code == 401
    assert api.with_key(kept_key).get("/api/v1/endpoints").status_code == 200
    assert ApiKey.objects.get(pk=kept.pk).revoked_at is None


def test_resend_mails_pending_invitations_and_skips_closed_ones(
    staff_client, api, cast, outbox, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        pending = invitation_create(inviter=cast.owner, email="a@x.test", role="admin", projects=[])
        accepted = invitation_create(
            inviter=cast.owner, email="b@x.test", role="member", projects=[]
        )
    first_token = mailed_token(outbox[0], "/accept-invite")
    assert accept_invite(api, mailed_token(outbox[1], "/accept-invite")).status_code == 201
    before = Invitation.objects.values().get(pk=accepted.pk)

    with django_capture_on_commit_callbacks(execute=True):
        response = post_action(staff_client, Invitation, "resend", [pending, accepted])

    notes = [str(m) for m in get_messages(response.wsgi_request)]
    assert notes == [
        "Resent 1 invitation(s).",
        "Skipped b@x.test: This invitation was already accepted or revoked.",
    ]
    assert [m.to for m in outbox[2:]] == [["a@x.test"]]
    assert Invitation.objects.values().get(pk=accepted.pk) == before
    assert accept_invite(api, first_token).status_code == 400
    assert accept_invite(api, mailed_token(outbox[2], "/accept-invite")).status_code == 201


def test_an_invitation_keeps_its_address_and_organization(staff_client, cast):
    invitation = invitation_create(inviter=cast.owner, email="a@x.test", role="member", projects=[])
    url = admin_url(Invitation, "change", invitation.pk)
    form = {
        "email": "thief@evil.test",
        "organization": str(cast.other_org.pk),
        "role": "admin",
        "expires_at_0": "2031-01-01",
        "expires_at_1": "00:00:00",
    }

    assert staff_client.post(url, form).status_code == 302
    refused = staff_client.post(url, {**form, "projects": [str(cast.other_project.pk)]})

    assert refused.status_code == 200
    assert "another organization" in refused.content.decode()
    saved = Invitation.objects.get()
    assert (saved.email, saved.organization, saved.role) == ("a@x.test", cast.org, "admin")
    assert list(saved.projects.all()) == []


def test_project_grants_stay_inside_the_users_organization(staff_client, cast):
    url = admin_url(User, "change", cast.member.pk)
    form = FormFields(staff_client.get(url).content.decode()).data
    form.update({"access-TOTAL_FORMS": "2", "access-1-project": str(cast.other_project.pk)})

    response = staff_client.post(url, form)

    assert response.status_code == 200
    assert "another organization" in response.content.decode()
    assert list(ProjectAccess.objects.values_list("project", flat=True)) == [cast.project.pk]
    form["access-1-project"] = str(Project.objects.create(organization=cast.org, name="B").pk)
    assert staff_client.post(url, form).status_code == 302
    assert ProjectAccess.objects.filter(user=cast.member).count() == 2


def test_the_organization_page_lists_users_and_projects_read_only(staff_client, cast):
    url = admin_url(Organization, "change", cast.org.pk)
    form = FormFields(staff_client.get(url).content.decode()).data
    owner_rows = [name for name, value in form.items() if value == str(cast.owner.pk)]
    assert owner_rows  # the user rows are posted back by id only
    form.update({name.replace("-id", "-role"): "member" for name in owner_rows})
    # A second project named like the first, in another case: the inline form would not
    # check the organization's unique names.
    form.update({"projects-TOTAL_FORMS": "2", "projects-1-name": "DEFAULT"})

    assert staff_client.post(url, form).status_code == 302
    assert User.objects.get(pk=cast.owner.pk).role == Role.OWNER
    assert list(Project.objects.for_org(cast.org).values_list("name", flat=True)) == ["Default"]


def add_escalation(org: Organization, project: Project, site: Endpoint, n: int) -> None:
    """An escalation policy paging the Slack channel (its URL a secret), and the site's
    incident escalating by it."""
    slack = NotificationChannel.objects.get(organization=org, kind="slack")
    policy = escalation_policy_create(
        organization=org,
        name=f"On-call {n}",
        steps=[StepInput(0, (slack,)), StepInput(5, (slack,))],
        repeat_every_minutes=30,
        projects=[project],
    )
    Escalation.objects.create(
        incident=Incident.objects.get(endpoint=site), policy=policy, next_step=1
    )

"""Every form post needs the CSRF token: without it the answer is 403 and nothing changes.

The client here checks CSRF like a browser meets it: it has fetched a page (so it holds the
CSRF cookie) and posts a form without the hidden token, as a cross-site form would.
"""

import re
from datetime import timedelta

import pytest
from django.core import mail

from accounts.models import Invitation, Organization, Project, User
from alerts.models import Delivery, MaintenanceWindow, NotificationChannel
from alerts.services import channel_create, maintenance_window_save
from apikeys.models import ApiKey
from apikeys.services import api_key_create
from monitoring.models import CheckResult, Endpoint
from statuspages.models import StatusPage
from tests.helpers import PASSWORD
from tests.web.conftest import csrf_token

NEW_PASSWORD = "a-brand-new-passphrase-7"


@pytest.fixture
def world(cast, make_endpoint, invitation):
    """Something for each form to change."""
    endpoint = make_endpoint(cast.project, name="Website")
    paused = make_endpoint(cast.project, name="Paused", enabled=False)
    spare = Project.objects.create(organization=cast.org, name="Spare")
    key, _ = api_key_create(creator=cast.owner, name="ci", scopes=["admin"], expires_at=None)
    channel = channel_create(
        organization=cast.org,
        name="Ops mail",
        kind="email",
        config={"addresses": ["ops@acme.test"], "to_members": False},
    )
    off = channel_create(
        organization=cast.org,
        name="Off",
        kind="email",
        config={"addresses": ["off@acme.test"], "to_members": False},
        enabled=False,
    )
    start = cast.owner.date_joined.replace(year=2100)
    window = maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        name="Upgrade",
        starts_at=start,
        ends_at=start + timedelta(hours=1),
    )
    status_page = StatusPage.objects.create(organization=cast.org, name="Acme", slug="acme")
    return {
        "status_page": status_page,
        "endpoint": endpoint,
        "paused": paused,
        "spare": spare,
        "invitation": invitation,
        "key": key,
        "member": cast.member,
        "channel": channel,
        "off": off,
        "window": window,
    }


def snapshot():
    """Everything a form could change."""
    return {
        "orgs": list(Organization.objects.values_list("id", "name").order_by("id")),
        "users": [
            (u.email, u.role, u.password, sorted(str(p.pk) for p in u.projects.all()))
            for u in User.objects.order_by("email")
        ],
        "invitations": list(
            Invitation.objects.values_list("id", "email", "revoked_at", "accepted_at").order_by(
                "email"
            )
        ),
        "projects": list(Project.objects.values_list("id", "name").order_by("id")),
        "endpoints": list(
            Endpoint.objects.values_list(
                "id", "name", "enabled", "status", "interval_seconds"
            ).order_by("id")
        ),
        "keys": list(ApiKey.objects.values_list("id", "name", "revoked_at").order_by("id")),
        "checks": CheckResult.objects.count(),
        "channels": list(
            NotificationChannel.objects.values_list("id", "name", "enabled").order_by("id")
        ),
        "windows": list(MaintenanceWindow.objects.values_list("id", "name").order_by("id")),
        "status_pages": list(StatusPage.objects.values_list("id", "name").order_by("id")),
        "deliveries": Delivery.objects.count(),
        "mails": len(mail.outbox),
    }


SIGNED_IN_FORMS = [
    ("/logout", lambda w: {}),
    ("/account", lambda w: {"current_password": PASSWORD, "new_password": NEW_PASSWORD}),
    ("/team/invite", lambda w: {"email": "x@acme.test", "role": "member"}),
    ("/team/{member}/role", lambda w: {"role": "admin"}),
    ("/team/{member}/projects", lambda w: {"projects": [str(w["spare"].pk)]}),
    ("/team/{member}/remove", lambda w: {}),
    ("/team/invitations/{invitation}/revoke", lambda w: {}),
    (
        "/endpoints/new",
        lambda w: {
            "project": str(w["spare"].pk),
            "name": "New",
            "type": "http",
            "target": "https://example.com/",
        },
    ),
    ("/endpoints/{endpoint}/edit", lambda w: {"name": "Renamed", "interval_seconds": "300"}),
    ("/endpoints/{endpoint}/pause", lambda w: {}),
    ("/endpoints/{paused}/resume", lambda w: {}),
    ("/endpoints/{endpoint}/check-now", lambda w: {}),
    ("/endpoints/{endpoint}/delete", lambda w: {}),
    ("/api-keys/new", lambda w: {"name": "stolen", "scopes": ["admin"]}),
    ("/api-keys/{key}/revoke", lambda w: {}),
    ("/projects/new", lambda w: {"name": "Injected"}),
    ("/projects/{spare}/rename", lambda w: {"name": "Hijacked"}),
    ("/projects/{spare}/delete", lambda w: {}),
    (
        "/alerts/channels/new",
        lambda w: {"name": "Planted", "kind": "email", "addresses": "spy@evil.test"},
    ),
    ("/alerts/channels/{channel}/disable", lambda w: {}),
    ("/alerts/channels/{off}/enable", lambda w: {}),
    ("/alerts/channels/{channel}/test", lambda w: {}),
    ("/alerts/channels/{channel}/delete", lambda w: {}),
    (
        "/alerts/maintenance/new",
        lambda w: {"starts_at": "2030-01-01T00:00", "ends_at": "2030-01-01T01:00"},
    ),
    ("/alerts/maintenance/{window}/delete", lambda w: {}),
    (
        "/status-pages/new",
        lambda w: {"name": "Planted", "slug": "planted", "visibility": "public", "uptime_days": 90},
    ),
    ("/status-pages/{status_page}/edit", lambda w: {"name": "Hijacked", "slug": "acme"}),
    ("/status-pages/{status_page}/delete", lambda w: {}),
]


def url_of(pattern, world):
    return pattern.format(**{name: getattr(obj, "pk", obj) for name, obj in world.items()})


@pytest.mark.parametrize(("pattern", "body"), SIGNED_IN_FORMS, ids=[p for p, _ in SIGNED_IN_FORMS])
def test_a_signed_in_form_without_the_token_is_refused(make_pages, cast, world, pattern, body):
    browser = make_pages(csrf=True).as_user(cast.owner)
    csrf_token(browser, "/")  # the browser holds the CSRF cookie, as after any page
    before = snapshot()

    response = browser.post(url_of(pattern, world), body(world))

    assert response.status_code == 403
    assert b"CSRF verification failed" in response.content
    assert snapshot() == before
    assert browser.get("/").status_code == 200  # still signed in (logout refused too)


@pytest.mark.parametrize(("pattern", "body"), SIGNED_IN_FORMS, ids=[p for p, _ in SIGNED_IN_FORMS])
def test_a_wrong_token_is_refused_too(make_pages, cast, world, pattern, body):
    browser = make_pages(csrf=True).as_user(cast.owner)
    csrf_token(browser, "/")
    before = snapshot()

    response = browser.post(
        url_of(pattern, world), {**body(world), "csrfmiddlewaretoken": "x" * 64}
    )

    assert response.status_code == 403
    assert snapshot() == before


def test_with_the_token_the_same_form_goes_through(make_pages, cast, world):
    browser = make_pages(csrf=True).as_user(cast.owner)
    token = csrf_token(browser, "/projects")

    response = browser.post("/projects/new", {"name": "Injected", "csrfmiddlewaretoken": token})

    assert response.status_code == 302
    assert Project.objects.filter(name="Injected").exists()


PUBLIC_FORMS = [
    ("/login", {"email": "owner@acme.test", "password": PASSWORD}),
    ("/register", {"email": "new@initech.test", "password": PASSWORD, "organization_name": "I"}),
    ("/forgot-password", {"email": "owner@acme.test"}),
    ("/reset-password", {"token": "t" * 40, "password": NEW_PASSWORD}),
    ("/accept-invite", {"token": "t" * 40, "password": PASSWORD}),
    ("/verify-email", {"token": "t" * 40}),
]


@pytest.mark.parametrize(("url", "body"), PUBLIC_FORMS, ids=[u for u, _ in PUBLIC_FORMS])
def test_a_public_form_without_the_token_is_refused(make_pages, cast, outbox, url, body):
    browser = make_pages(csrf=True)
    csrf_token(browser, "/login")
    before = snapshot()

    response = browser.post(url, body)

    assert response.status_code == 403
    assert snapshot() == before
    assert outbox == []
    assert browser.get("/").status_code == 302  # login did not happen


def test_login_with_the_token_goes_through(make_pages, cast):
    browser = make_pages(csrf=True)
    token = csrf_token(browser, "/login")

    response = browser.post(
        "/login", {"email": "owner@acme.test", "password": PASSWORD, "csrfmiddlewaretoken": token}
    )

    assert response.status_code == 302
    assert browser.get("/").status_code == 200


def test_login_rotates_the_csrf_token(make_pages, cast):
    browser = make_pages(csrf=True)
    token = csrf_token(browser, "/login")
    cookie = browser.cookies["csrftoken"].value

    browser.post(
        "/login", {"email": "owner@acme.test", "password": PASSWORD, "csrfmiddlewaretoken": token}
    )

    assert browser.cookies["csrftoken"].value != cookie


def test_every_form_on_the_pages_carries_the_token(pages, cast, world):
    pages.as_user(cast.owner)
    endpoint = world["endpoint"]
    for url in [
        "/",
        f"/endpoints/{endpoint.pk}",
        f"/endpoints/{endpoint.pk}/edit",
        "/endpoints/new",
        "/team",
        "/projects",
        "/api-keys",
        "/account",
        "/alerts",
    ]:
        source = pages.get(url).content.decode()
        posts = source.count('method="post"')
        assert posts, url
        assert source.count('name="csrfmiddlewaretoken"') == posts, url


def test_every_public_form_carries_the_token(pages, cast, outbox):
    pages.as_user(cast.owner)
    pages.post("/team/invite", {"email": "new@acme.test", "role": "member"})
    invitation = re.search(r"accept-invite\?token=(\S+)", outbox[0].body).group(1)
    pages.as_user(None)
    for url in [
        "/login",
        "/register",
        "/forgot-password",
        "/reset-password?token=abc",
        f"/accept-invite?token={invitation}",
        "/verify-email?token=abc",
    ]:
        source = pages.get(url).content.decode()
        posts = source.count('method="post"')
        assert posts, url
        assert source.count('name="csrfmiddlewaretoken"') == posts, url

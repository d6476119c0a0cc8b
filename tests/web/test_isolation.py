"""Another organization's ids answer 404 on every page and change nothing; so do ids in a
project a member is not granted. A 404 looks the same as for an id that never existed."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Invitation, Project, Role, User
from alerts.models import Delivery, MaintenanceWindow, NotificationChannel
from alerts.services import channel_create, maintenance_window_save
from apikeys.models import ApiKey
from apikeys.services import api_key_create
from monitoring.models import CheckResult, Endpoint, Incident
from tests.web.conftest import visible_text

NOT_FOUND = "There is nothing here, or nothing you can see."


@pytest.fixture
def acme(cast, make_endpoint, make_user, invitation):
    """Acme's things an outsider aims at."""
    endpoint = make_endpoint(cast.project, name="Acme site")
    paused = make_endpoint(cast.project, name="Acme paused", enabled=False)
    key, _ = api_key_create(creator=cast.admin, name="acme key", scopes=["admin"], expires_at=None)
    mail_to = {"addresses": ["ops@acme.test"], "to_members": False}
    channel = channel_create(organization=cast.org, name="Acme mail", kind="email", config=mail_to)
    off = channel_create(
        organization=cast.org, name="Acme off", kind="email", config=mail_to, enabled=False
    )
    start = timezone.now() + timedelta(days=1)
    window = maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        name="Acme upgrade",
        starts_at=start,
        ends_at=start + timedelta(hours=1),
    )
    return {
        "endpoint": endpoint,
        "paused": paused,
        "invitation": invitation,
        "key": key,
        "member": cast.member,
        "project": cast.project,
        "channel": channel,
        "off": off,
        "window": window,
    }


def snapshot():
    return {
        "users": sorted(User.objects.values_list("email", "role")),
        "grants": sorted((u.email, [p.name for p in u.projects.all()]) for u in User.objects.all()),
        "invitations": list(Invitation.objects.values_list("email", "revoked_at")),
        "projects": sorted(Project.objects.values_list("id", "name")),
        "endpoints": sorted(
            Endpoint.objects.values_list("id", "name", "enabled", "status", "project_id")
        ),
        "keys": sorted(ApiKey.objects.values_list("id", "revoked_at")),
        "checks": CheckResult.objects.count(),
        "channels": sorted(NotificationChannel.objects.values_list("id", "name", "enabled")),
        "windows": sorted(MaintenanceWindow.objects.values_list("id", "name")),
        "deliveries": Delivery.objects.count(),
    }


def assert_not_found(response):
    assert response.status_code == 404, response.status_code
    assert NOT_FOUND in visible_text(response)


GETS = [
    "/endpoints/{endpoint}",
    "/endpoints/{endpoint}?period=7d",
    "/endpoints/{endpoint}/edit",
    "/compare?endpoints={endpoint}",
]
POSTS = [
    ("/endpoints/{endpoint}/edit", {"name": "pwned"}),
    ("/endpoints/{endpoint}/pause", {}),
    ("/endpoints/{paused}/resume", {}),
    ("/endpoints/{endpoint}/check-now", {}),
    ("/endpoints/{endpoint}/delete", {}),
    ("/team/{member}/role", {"role": "owner"}),
    ("/team/{member}/projects", {"projects": []}),
    ("/team/{member}/remove", {}),
    ("/team/invitations/{invitation}/revoke", {}),
    ("/api-keys/{key}/revoke", {}),
    ("/projects/{project}/rename", {"name": "pwned"}),
    ("/projects/{project}/delete", {}),
    ("/alerts/channels/{channel}/disable", {}),
    ("/alerts/channels/{off}/enable", {}),
    ("/alerts/channels/{channel}/test", {}),
    ("/alerts/channels/{channel}/delete", {}),
    ("/alerts/maintenance/{window}/delete", {}),
]


def url_of(pattern, things):
    return pattern.format(**{name: obj.pk for name, obj in things.items()})


@pytest.mark.parametrize("pattern", GETS)
def test_outsider_gets_404_on_acme_pages(pages, cast, acme, pattern):
    response = pages.as_user(cast.outsider).get(url_of(pattern, acme))

    assert_not_found(response)
    assert "Acme site" not in response.content.decode()


@pytest.mark.parametrize(("pattern", "body"), POSTS, ids=[p for p, _ in POSTS])
def test_outsider_posts_to_acme_ids_are_404_and_change_nothing(
    pages, cast, acme, outbox, pattern, body
):
    before = snapshot()

    response = pages.as_user(cast.outsider).post(url_of(pattern, acme), body)

    assert_not_found(response)
    assert snapshot() == before
    assert outbox == []


@pytest.mark.parametrize(("pattern", "body"), POSTS, ids=[p for p, _ in POSTS])
def test_a_foreign_id_answers_like_a_missing_one(pages, cast, acme, pattern, body):
    pages.as_user(cast.outsider)
    missing = {name: type("Missing", (), {"pk": uuid.uuid4()})() for name in acme}

    foreign = pages.post(url_of(pattern, acme), body)
    absent = pages.post(url_of(pattern, missing), body)

    assert foreign.status_code == absent.status_code == 404
    assert visible_text(foreign) == visible_text(absent)


def test_compare_with_one_foreign_among_own_endpoints_is_404(pages, cast, acme, make_endpoint):
    own = make_endpoint(cast.other_project, name="Globex site")

    response = pages.as_user(cast.outsider).get(
        f"/compare?endpoints={own.pk}&endpoints={acme['endpoint'].pk}"
    )

    assert_not_found(response)


def test_the_outsider_overview_never_shows_acme(pages, cast, acme, record):
    soon = timezone.now() + timedelta(seconds=1)
    record(
        acme["endpoint"],
        [
            (soon, False, 5.0, "acme is down"),
            (soon + timedelta(minutes=1), False, 5.0, "acme is down"),
        ],
    )
    assert Incident.objects.filter(endpoint=acme["endpoint"]).exists()
    urls = ["/", f"/?project={cast.project.pk}", "/compare", "/projects", "/api-keys", "/team"]
    for url in [*urls, "/alerts"]:
        source = pages.as_user(cast.outsider).get(url).content.decode()
        assert "Acme" not in source, url
        assert "acme" not in source.replace("owner@globex.test", ""), url


def test_outsider_creating_an_endpoint_in_an_acme_project_is_a_400(pages, cast):
    response = pages.as_user(cast.outsider).post(
        "/endpoints/new",
        {
            "project": str(cast.project.pk),
            "name": "Planted",
            "type": "http",
            "target": "https://example.com/",
        },
    )

    assert response.status_code == 400
    assert "object does not exist" in visible_text(response)
    assert not Endpoint.objects.exists()


def test_moving_an_endpoint_into_a_foreign_project_is_a_400(pages, cast, make_endpoint):
    own = make_endpoint(cast.other_project, name="Globex site")

    response = pages.as_user(cast.outsider).post(
        f"/endpoints/{own.pk}/edit", {"project": str(cast.project.pk)}
    )

    assert response.status_code == 400
    own.refresh_from_db()
    assert own.project == cast.other_project


def test_inviting_with_a_foreign_project_is_a_400(pages, cast, outbox):
    response = pages.as_user(cast.outsider).post(
        "/team/invite",
        {"email": "spy@globex.test", "role": "member", "projects": [str(cast.project.pk)]},
    )

    assert response.status_code == 400
    assert f"Unknown project: {cast.project.pk}." in visible_text(response)
    assert not Invitation.objects.exists()
    assert outbox == []


def test_granting_a_foreign_project_is_a_400(pages, cast, make_user):
    spy = make_user(cast.other_org, "spy@globex.test", Role.MEMBER)

    response = pages.as_user(cast.outsider).post(
        f"/team/{spy.pk}/projects", {"projects": [str(cast.project.pk)]}
    )

    assert response.status_code == 400
    assert list(spy.projects.all()) == []


def test_a_member_revoking_an_admins_key_is_404(pages, cast, acme):
    before = snapshot()

    response = pages.as_user(cast.member).post(f"/api-keys/{acme['key'].pk}/revoke")

    assert_not_found(response)
    assert snapshot() == before


@pytest.fixture
def hidden(cast, make_endpoint):
    """An endpoint of Acme in a project the member is not granted."""
    project = Project.objects.create(organization=cast.org, name="Not granted")
    return make_endpoint(project, name="Hidden service")


@pytest.mark.parametrize(
    "pattern", ["/endpoints/{}", "/endpoints/{}/edit", "/compare?endpoints={}"]
)
def test_member_gets_404_on_an_endpoint_of_a_project_not_granted(pages, cast, hidden, pattern):
    response = pages.as_user(cast.member).get(pattern.format(hidden.pk))

    assert_not_found(response)


@pytest.mark.parametrize("action", ["edit", "pause", "check-now", "delete"])
def test_member_posts_on_an_endpoint_not_granted_are_404(pages, cast, hidden, action):
    before = snapshot()

    response = pages.as_user(cast.member).post(f"/endpoints/{hidden.pk}/{action}", {"name": "x"})

    assert_not_found(response)
    assert snapshot() == before


def test_the_same_endpoint_is_visible_once_granted(pages, cast, hidden):
    cast.member.projects.add(hidden.project)

    assert pages.as_user(cast.member).get(f"/endpoints/{hidden.pk}").status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "/endpoints/not-a-uuid",
        "/endpoints/123",
        "/team/x/remove",
        "/api-keys/1/revoke",
        "/alerts/channels/1/delete",
        "/alerts/maintenance/x/delete",
    ],
)
def test_malformed_ids_are_404(pages, cast, url):
    pages.as_user(cast.owner)

    response = pages.post(url) if url.endswith(("remove", "revoke", "delete")) else pages.get(url)

    assert_not_found(response)

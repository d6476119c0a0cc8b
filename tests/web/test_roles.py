"""Who may do what on the pages: the API's role rules, enforced by the same services."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Invitation, Project, Role, User
from alerts.models import Delivery, MaintenanceWindow, NotificationChannel
from alerts.services import channel_create, maintenance_window_save
from apikeys.services import api_key_create
from monitoring.models import Endpoint
from tests.web.conftest import Markup, fragment, html, visible_text

TARGET = "https://example.com/health"


@pytest.fixture
def second(cast):
    """A project of Acme the member is not granted."""
    return Project.objects.create(organization=cast.org, name="Secret project")


@pytest.fixture
def alerting(cast):
    """A channel and a maintenance window for the whole organization: the member sees them."""
    channel = channel_create(
        organization=cast.org,
        name="Ops mail",
        kind="email",
        config={"addresses": ["ops@acme.test"], "to_members": False},
        enabled=False,
    )
    start = timezone.now() + timedelta(days=1)
    window = maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        name="Upgrade",
        starts_at=start,
        ends_at=start + timedelta(hours=1),
    )
    return channel, window


def roles():
    return dict(User.objects.values_list("email", "role"))


def state():
    return (
        roles(),
        sorted(User.objects.values_list("email", flat=True)),
        sorted(Project.objects.values_list("name", flat=True)),
        list(Invitation.objects.values_list("email", "revoked_at")),
        sorted((u.email, [p.name for p in u.projects.all()]) for u in User.objects.all()),
        sorted(NotificationChannel.objects.values_list("id", "name", "enabled")),
        sorted(MaintenanceWindow.objects.values_list("id", "name")),
        Delivery.objects.count(),
    )


# --- Members stay out of team and project management ---------------------------------------------


def test_member_gets_a_403_page_on_the_team_page(pages, cast):
    response = pages.as_user(cast.member).get("/team")

    assert response.status_code == 403
    assert "This page needs the owner or admin role." in visible_text(response)


MANAGER_POSTS = [
    ("/team/invite", lambda c, s, i: {"email": "friend@acme.test", "role": "member"}),
    ("/team/{admin}/role", lambda c, s, i: {"role": "member"}),
    ("/team/{member}/role", lambda c, s, i: {"role": "admin"}),
    ("/team/{member}/projects", lambda c, s, i: {"projects": [str(s.pk)]}),
    ("/team/{admin}/remove", lambda c, s, i: {}),
    ("/team/invitations/{invitation}/revoke", lambda c, s, i: {}),
    ("/projects/new", lambda c, s, i: {"name": "Mine"}),
    ("/projects/{project}/rename", lambda c, s, i: {"name": "Renamed"}),
    ("/projects/{second}/delete", lambda c, s, i: {}),
    (
        "/alerts/channels/new",
        lambda c, s, i: {"name": "Mine", "kind": "email", "addresses": "me@acme.test"},
    ),
    ("/alerts/channels/{channel}/enable", lambda c, s, i: {}),
    ("/alerts/channels/{channel}/disable", lambda c, s, i: {}),
    ("/alerts/channels/{channel}/test", lambda c, s, i: {}),
    ("/alerts/channels/{channel}/delete", lambda c, s, i: {}),
    (
        "/alerts/maintenance/new",
        lambda c, s, i: {"starts_at": "2030-01-01T00:00", "ends_at": "2030-01-01T01:00"},
    ),
    ("/alerts/maintenance/{window}/delete", lambda c, s, i: {}),
]


@pytest.mark.parametrize(("pattern", "body"), MANAGER_POSTS, ids=[p for p, _ in MANAGER_POSTS])
def test_member_gets_403_on_every_management_post_and_nothing_changes(
    pages, cast, second, invitation, alerting, outbox, pattern, body
):
    channel, window = alerting
    url = pattern.format(
        admin=cast.admin.pk,
        member=cast.member.pk,
        invitation=invitation.pk,
        project=cast.project.pk,
        second=second.pk,
        channel=channel.pk,
        window=window.pk,
    )
    before = state()

    response = pages.as_user(cast.member).post(url, body(cast, second, invitation))

    assert response.status_code == 403
    assert state() == before
    assert outbox == []


def test_member_sees_no_team_link_and_no_project_management(pages, cast, second):
    pages.as_user(cast.member)

    overview = Markup(html(pages.get("/")))
    projects = pages.get("/projects")

    assert not overview.find("a", href="/team")
    assert "Secret project" not in html(projects)
    assert "/rename" not in html(projects)
    assert "/delete" not in html(projects)
    assert 'action="/projects/new"' not in html(projects)


def test_managers_see_the_team_link_and_project_management(pages, cast, second):
    for user in (cast.owner, cast.admin):
        pages.as_user(user)
        assert Markup(html(pages.get("/"))).find("a", href="/team")
        projects = html(pages.get("/projects"))
        assert f"/projects/{second.pk}/rename" in projects
        assert f"/projects/{second.pk}/delete" in projects


# --- The owner role ----------------------------------------------------------------------------


def test_admin_cannot_grant_the_owner_role(pages, cast):
    response = pages.as_user(cast.admin).post(f"/team/{cast.member.pk}/role", {"role": "owner"})

    assert response.status_code == 403
    assert "Only an owner can grant or change the owner role." in visible_text(response)
    assert roles()["member@acme.test"] == Role.MEMBER


def test_admin_cannot_change_an_owners_role(pages, make_user, cast):
    make_user(cast.org, "owner2@acme.test", Role.OWNER)

    response = pages.as_user(cast.admin).post(f"/team/{cast.owner.pk}/role", {"role": "member"})

    assert response.status_code == 403
    assert "Only an owner can grant or change the owner role." in visible_text(response)
    assert roles()["owner@acme.test"] == Role.OWNER


def test_admin_cannot_remove_an_owner(pages, make_user, cast):
    make_user(cast.org, "owner2@acme.test", Role.OWNER)

    response = pages.as_user(cast.admin).post(f"/team/{cast.owner.pk}/remove")

    assert response.status_code == 403
    assert "Only an owner can remove an owner." in visible_text(response)
    assert User.objects.filter(pk=cast.owner.pk).exists()


def invite_roles(response):
    """The roles the invitation form offers."""
    form = fragment(response, 'action="/team/invite"', "</form>")
    return [attrs["value"] for attrs in Markup(form).find("option")]


def test_admin_cannot_invite_an_owner_nor_is_offered_the_role(pages, cast, outbox):
    pages.as_user(cast.admin)
    offered = invite_roles(pages.get("/team"))

    response = pages.post("/team/invite", {"email": "boss@acme.test", "role": "owner"})

    assert offered == ["admin", "member"]
    assert invite_roles(pages.as_user(cast.owner).get("/team")) == ["owner", "admin", "member"]
    assert response.status_code == 403
    assert "Only an owner can invite another owner." in visible_text(response)
    assert not Invitation.objects.exists()
    assert outbox == []


def test_owner_can_grant_the_owner_role_and_admin_can_change_members(pages, cast):
    granted = pages.as_user(cast.owner).post(f"/team/{cast.admin.pk}/role", {"role": "owner"})
    promoted = pages.as_user(cast.admin).post(f"/team/{cast.member.pk}/role", {"role": "admin"})

    assert granted.status_code == promoted.status_code == 302
    assert roles() == {
        "owner@acme.test": Role.OWNER,
        "admin@acme.test": Role.OWNER,
        "member@acme.test": Role.ADMIN,
        "owner@globex.test": Role.OWNER,
    }


def test_the_last_owner_cannot_be_demoted(pages, cast):
    response = pages.as_user(cast.owner).post(f"/team/{cast.owner.pk}/role", {"role": "admin"})

    assert response.status_code == 400
    assert "The last owner cannot be demoted" in visible_text(response)
    assert roles()["owner@acme.test"] == Role.OWNER


def test_the_last_owner_cannot_be_removed(pages, cast):
    by_admin = pages.as_user(cast.admin).post(f"/team/{cast.owner.pk}/remove")
    by_self = pages.as_user(cast.owner).post(f"/team/{cast.owner.pk}/remove")

    assert by_admin.status_code == 400
    assert "The last owner cannot be removed." in visible_text(by_admin)
    assert by_self.status_code == 400
    assert "You cannot remove your own account." in visible_text(by_self)
    assert User.objects.filter(pk=cast.owner.pk, role=Role.OWNER).exists()


def test_with_two_owners_one_may_step_down(pages, make_user, cast):
    make_user(cast.org, "owner2@acme.test", Role.OWNER)

    response = pages.as_user(cast.owner).post(f"/team/{cast.owner.pk}/role", {"role": "admin"})

    assert response.status_code == 302
    assert roles()["owner@acme.test"] == Role.ADMIN


def test_an_unknown_role_is_a_400(pages, cast):
    response = pages.as_user(cast.owner).post(f"/team/{cast.member.pk}/role", {"role": "god"})

    assert response.status_code == 400
    assert '"god" is not a valid choice.' in visible_text(response)
    assert roles()["member@acme.test"] == Role.MEMBER


def test_managers_invite_and_set_projects_and_remove(pages, cast, second, outbox):
    pages.as_user(cast.admin)

    invited = pages.post(
        "/team/invite",
        {"email": "friend@acme.test", "role": "member", "projects": [str(second.pk)]},
    )
    granted = pages.post(f"/team/{cast.member.pk}/projects", {"projects": [str(second.pk)]})
    removed = pages.post(f"/team/{cast.member.pk}/remove")

    assert invited.status_code == granted.status_code == removed.status_code == 302
    invitation = Invitation.objects.get()
    assert (invitation.email, list(invitation.projects.all())) == ("friend@acme.test", [second])
    assert outbox[0].to == ["friend@acme.test"]
    assert not User.objects.filter(pk=cast.member.pk).exists()


def test_a_removed_users_session_ends(pages, make_pages, cast):
    member = make_pages().as_user(cast.member)
    assert member.get("/").status_code == 200

    pages.as_user(cast.owner).post(f"/team/{cast.member.pk}/remove")

    assert member.get("/").status_code == 302


def test_a_role_change_applies_to_a_running_session(pages, make_pages, cast):
    member = make_pages().as_user(cast.member)
    assert member.get("/team").status_code == 403

    pages.as_user(cast.owner).post(f"/team/{cast.member.pk}/role", {"role": "admin"})

    assert member.get("/team").status_code == 200


# --- What a member sees and may create ----------------------------------------------------------


@pytest.fixture
def spread(cast, second, make_endpoint):
    """One endpoint in the member's project and one in a project it is not granted."""
    return (
        make_endpoint(cast.project, name="Granted service"),
        make_endpoint(second, name="Hidden service"),
    )


def test_member_sees_only_granted_projects_endpoints(pages, cast, spread):
    granted, hidden = spread
    pages.as_user(cast.member)

    for url in ["/", "/compare", f"/compare?endpoints={granted.pk}", "/endpoints/new", "/projects"]:
        source = html(pages.get(url))
        assert "Hidden service" not in source, url
        assert str(hidden.pk) not in source, url
        assert "Secret project" not in source, url
    assert "Granted service" in html(pages.get("/"))
    assert "Granted service" in html(pages.get("/compare"))


def test_owner_and_admin_see_every_project_of_the_org(pages, cast, spread, make_endpoint):
    foreign = make_endpoint(cast.other_project, name="Globex service")
    for user in (cast.owner, cast.admin):
        pages.as_user(user)
        for url in ["/", "/compare"]:
            source = html(pages.get(url))
            assert "Granted service" in source
            assert "Hidden service" in source
            assert "Globex service" not in source
            assert str(foreign.pk) not in source
        assert "Secret project" in html(pages.get("/endpoints/new"))


def endpoint_form(project, name="Created"):
    return {
        "project": str(project.pk),
        "name": name,
        "type": "http",
        "target": TARGET,
        "interval_seconds": "60",
    }


def test_member_creates_an_endpoint_in_a_granted_project(pages, cast):
    response = pages.as_user(cast.member).post("/endpoints/new", endpoint_form(cast.project))

    endpoint = Endpoint.objects.get(name="Created")
    assert response.status_code == 302
    assert response["Location"] == f"/endpoints/{endpoint.pk}"
    assert endpoint.project == cast.project


def test_member_cannot_create_in_a_project_not_granted(pages, cast, second):
    response = pages.as_user(cast.member).post("/endpoints/new", endpoint_form(second))

    assert response.status_code == 400
    assert "object does not exist" in visible_text(response)
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize("who", ["owner", "admin"])
def test_owner_and_admin_create_anywhere_in_the_org(pages, cast, second, who):
    pages.as_user(getattr(cast, who))

    first = pages.post("/endpoints/new", endpoint_form(cast.project, "One"))
    other = pages.post("/endpoints/new", endpoint_form(second, "Two"))

    assert first.status_code == other.status_code == 302
    assert dict(Endpoint.objects.values_list("name", "project")) == {
        "One": cast.project.pk,
        "Two": second.pk,
    }


def test_member_cannot_move_an_endpoint_to_a_project_not_granted(pages, cast, second, spread):
    granted, _ = spread

    response = pages.as_user(cast.member).post(
        f"/endpoints/{granted.pk}/edit", {"project": str(second.pk)}
    )

    assert response.status_code == 400
    granted.refresh_from_db()
    assert granted.project == cast.project


def test_member_sees_and_revokes_only_its_own_keys(pages, cast):
    own, _ = api_key_create(creator=cast.member, name="mine", scopes=["admin"], expires_at=None)
    api_key_create(creator=cast.admin, name="admins key", scopes=["admin"], expires_at=None)

    member_page = html(pages.as_user(cast.member).get("/api-keys"))
    owner_page = html(pages.as_user(cast.owner).get("/api-keys"))

    assert "mine" in member_page
    assert "admins key" not in member_page
    assert "mine" in owner_page
    assert "admins key" in owner_page
    assert f"/api-keys/{own.pk}/revoke" in member_page

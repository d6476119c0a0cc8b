"""Heartbeat slug URLs (`/ping/<project ping_key>/<slug>`), rotating a project's ping key, and
reading a ping's body."""

from datetime import UTC, datetime
from uuid import uuid4

import pytest
import time_machine

from accounts.models import Project
from monitoring.models import CheckResult, Endpoint, EndpointStatus, Ping
from tests.helpers import assert_problem

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def create(api, cast, **fields):
    body = {"project": str(cast.project.id), "name": "Nightly backup", "type": "heartbeat"}
    body.update(fields)
    return api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")


@pytest.fixture
def heartbeat(api, cast):
    """A heartbeat with the slug `nightly-backup`, made through the API."""
    response = create(api, cast, slug="nightly-backup")
    assert response.status_code == 201, response.content
    return Endpoint.objects.get(pk=response.json()["id"])


def slug_url(cast, slug="nightly-backup", suffix=""):
    cast.project.refresh_from_db()
    return f"/ping/{cast.project.ping_key}/{slug}{suffix}"


# --- Keys and slugs in the API ----------------------------------------------------------------


def test_each_project_has_a_distinct_ping_key_shown_on_its_resource(api, cast):
    body = api.as_user(cast.owner).get(f"/api/v1/projects/{cast.project.id}").json()
    assert body["ping_key"] == cast.project.ping_key
    assert len(body["ping_key"]) >= 22
    assert cast.project.ping_key != cast.other_project.ping_key


def test_a_heartbeat_takes_a_slug_and_shows_it(api, cast, heartbeat):
    body = api.as_user(cast.member).get(f"/api/v1/endpoints/{heartbeat.id}").json()
    assert body["slug"] == "nightly-backup"
    assert heartbeat.slug == "nightly-backup"


def test_a_slug_is_optional(api, cast):
    response = create(api, cast)
    assert response.status_code == 201, response.content
    assert response.json()["slug"] is None


@pytest.mark.parametrize(
    "slug", ["", "Nightly", "with space", "dot.ted", "slash/ed", "é", "a" * 101]
)
def test_a_bad_slug_is_a_400_naming_slug_and_nothing_is_stored(api, cast, slug):
    body = assert_problem(create(api, cast, slug=slug), 400, "validation_error")
    assert set(body["errors"]) == {"slug"}
    assert not Endpoint.objects.exists()


def test_a_slug_of_100_allowed_characters_is_accepted(api, cast):
    response = create(api, cast, slug="a-b_0" + "z" * 95)
    assert response.status_code == 201, response.content


def test_a_slug_taken_in_the_project_is_a_400_naming_slug(api, cast, heartbeat):
    body = assert_problem(create(api, cast, slug="nightly-backup"), 400, "validation_error")
    assert set(body["errors"]) == {"slug"}
    assert Endpoint.objects.count() == 1


def test_the_same_slug_may_be_used_in_another_project(api, cast, heartbeat):
    other = api.as_user(cast.outsider).post(
        "/api/v1/endpoints",
        {
            "project": str(cast.other_project.id),
            "name": "Backup",
            "type": "heartbeat",
            "slug": "nightly-backup",
        },
        format="json",
    )
    assert other.status_code == 201, other.content


def test_a_slug_can_be_changed_kept_and_removed(api, cast, heartbeat):
    url = f"/api/v1/endpoints/{heartbeat.id}"
    owner = api.as_user(cast.owner)
    assert owner.patch(url, {"slug": "backup"}, format="json").json()["slug"] == "backup"
    assert owner.patch(url, {"name": "Renamed"}, format="json").json()["slug"] == "backup"
    assert owner.patch(url, {"slug": "backup"}, format="json").status_code == 200
    assert owner.patch(url, {"slug": None}, format="json").json()["slug"] is None


def test_a_change_to_a_taken_slug_is_a_400(api, cast, heartbeat):
    second = create(api, cast, name="Second", slug="second").json()
    response = api.as_user(cast.owner).patch(
        f"/api/v1/endpoints/{second['id']}", {"slug": "nightly-backup"}, format="json"
    )
    assert set(assert_problem(response, 400, "validation_error")["errors"]) == {"slug"}
    assert Endpoint.objects.get(pk=second["id"]).slug == "second"


def test_a_probed_endpoint_refuses_a_slug(api, cast):
    response = api.as_user(cast.owner).post(
        "/api/v1/endpoints",
        {
            "project": str(cast.project.id),
            "name": "Site",
            "type": "http",
            "target": "https://example.com",
            "slug": "site",
        },
        format="json",
    )
    assert set(assert_problem(response, 400, "validation_error")["errors"]) == {"slug"}


# --- Slug ping routes -----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "head", "post"])
def test_a_slug_ping_is_ok_and_stored_as_a_success(client, cast, heartbeat, method):
    response = getattr(client, method)(slug_url(cast))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    ping = Ping.objects.get()
    assert (ping.endpoint_id, ping.kind, ping.method) == (heartbeat.id, "success", method.upper())
    assert CheckResult.objects.filter(endpoint=heartbeat, ok=True).count() == 1
    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.UP


@pytest.mark.parametrize(
    ("suffix", "kind", "exit_status"),
    [
        ("/start", "start", None),
        ("/fail", "fail", None),
        ("/log", "log", None),
        ("/0", "success", 0),
        ("/3", "fail", 3),
        ("/255", "fail", 255),
    ],
)
def test_a_slug_ping_takes_the_same_suffixes(client, cast, heartbeat, suffix, kind, exit_status):
    assert client.post(slug_url(cast, suffix=suffix), data="hello", content_type="text/plain")
    ping = Ping.objects.get()
    assert (ping.kind, ping.exit_status, ping.body) == (kind, exit_status, "hello")


def test_a_slug_ping_pairs_a_run_by_rid(client, cast, heartbeat):
    rid = uuid4()
    assert client.get(slug_url(cast, suffix=f"/start?rid={rid}")).status_code == 200
    assert client.get(slug_url(cast, suffix=f"?rid={rid}")).status_code == 200
    end = Ping.objects.get(kind="success")
    assert end.rid == rid
    assert end.duration_ms is not None


@pytest.mark.parametrize("suffix", ["", "/start", "/fail"])
def test_an_unknown_slug_or_key_is_404_and_nothing_is_written(client, cast, heartbeat, suffix):
    cast.project.refresh_from_db()
    for url in (
        f"/ping/{cast.project.ping_key}/unknown{suffix}",
        f"/ping/{cast.other_project.ping_key}/nightly-backup{suffix}",
        f"/ping/not-a-key/nightly-backup{suffix}",
    ):
        response = client.get(url)
        assert response.status_code == 404, url
        assert response.content == b"not found"
    assert not Ping.objects.exists()
    assert not CheckResult.objects.exists()


def test_an_unknown_suffix_after_a_slug_is_404(client, cast, heartbeat):
    assert client.get(slug_url(cast, suffix="/256")).status_code == 404
    assert client.get(slug_url(cast, suffix="/begin")).status_code == 404
    assert not Ping.objects.exists()


def test_a_uuid_with_an_action_is_still_the_uuid_route(client, cast, heartbeat):
    assert client.get(f"/ping/{heartbeat.ping_key}/fail").status_code == 200
    assert client.get(f"/ping/{uuid4()}/fail").status_code == 404
    assert Ping.objects.get().kind == "fail"


def test_a_slug_that_reads_as_an_action_is_a_slug(api, client, cast):
    made = create(api, cast, slug="start")
    assert made.status_code == 201, made.content
    assert client.get(slug_url(cast, slug="start")).status_code == 200
    assert Ping.objects.get().kind == "success"


def test_a_heartbeat_whose_slug_is_removed_is_404_by_slug(api, client, cast, heartbeat):
    url = slug_url(cast)
    api.as_user(cast.owner).patch(f"/api/v1/endpoints/{heartbeat.id}", {"slug": None}, "json")
    assert client.get(url).status_code == 404
    assert client.get(f"/ping/{heartbeat.ping_key}").status_code == 200


def test_slug_and_uuid_pings_share_the_heartbeats_rate_limit(client, cast, heartbeat, settings):
    settings.PING_RATE_PER_SECOND = 4
    url = slug_url(cast)
    with time_machine.travel(T0, tick=False):
        answers = [client.get(url if i % 2 else f"/ping/{heartbeat.ping_key}") for i in range(6)]
    assert [a.status_code for a in answers] == [200] * 4 + [429] * 2
    assert Ping.objects.count() == 4


def test_migrated_projects_get_distinct_keys(cast):
    keys = list(Project.objects.values_list("ping_key", flat=True))
    assert all(keys)
    assert len(set(keys)) == len(keys)


# --- Rotating a project's ping key ------------------------------------------------------------


def rotate(api, user, project):
    return api.as_user(user).post(f"/api/v1/projects/{project.id}/rotate-ping-key")


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_owners_and_admins_rotate_the_key_and_the_old_one_stops_at_once(
    api, client, cast, heartbeat, role
):
    old_url = slug_url(cast)
    old_key = cast.project.ping_key
    response = rotate(api, getattr(cast, role), cast.project)
    assert response.status_code == 200, response.content
    new_key = response.json()["ping_key"]
    assert new_key != old_key
    assert response.json()["id"] == str(cast.project.id)
    assert client.get(old_url).status_code == 404
    assert not Ping.objects.exists()
    assert client.get(f"/ping/{new_key}/nightly-backup").status_code == 200
    assert client.get(f"/ping/{heartbeat.ping_key}").status_code == 200  # the UUID URL stays
    assert Ping.objects.count() == 2


def test_a_member_may_not_rotate_the_key(api, cast, heartbeat):
    before = cast.project.ping_key
    assert_problem(rotate(api, cast.member, cast.project), 403, "permission_denied")
    cast.project.refresh_from_db()
    assert cast.project.ping_key == before


def test_a_foreign_project_is_404(api, cast):
    before = cast.other_project.ping_key
    assert_problem(rotate(api, cast.owner, cast.other_project), 404, "not_found")
    cast.other_project.refresh_from_db()
    assert cast.other_project.ping_key == before


def test_rotating_needs_a_login(api, cast):
    assert_problem(rotate(api, None, cast.project), 401, "not_authenticated")


# --- A ping's body --------------------------------------------------------------------------


def body_url(endpoint, ping):
    return f"/api/v1/endpoints/{endpoint.id}/pings/{ping.id}/body"


@pytest.mark.parametrize("role", ["owner", "admin", "member"])
def test_a_pings_body_is_answered_as_plain_text(api, client, cast, heartbeat, role):
    text = "backup done\n<b>42 files</b> — ok"
    client.post(slug_url(cast, suffix="/log"), data=text.encode(), content_type="text/plain")
    response = api.as_user(getattr(cast, role)).get(body_url(heartbeat, Ping.objects.get()))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == text


@pytest.mark.parametrize(
    "accept", ["text/plain", "text/*", "*/*", "text/plain, */*;q=0.1", "application/json", None]
)
def test_a_body_is_text_whatever_a_client_accepts(api, client, cast, heartbeat, accept):
    client.post(slug_url(cast), data="done", content_type="text/plain")
    headers = {"HTTP_ACCEPT": accept} if accept else {}

    response = api.as_user(cast.member).get(body_url(heartbeat, Ping.objects.get()), **headers)

    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content == b"done"


@pytest.mark.parametrize("accept", ["text/plain", "*/*", None])
def test_a_bodys_errors_stay_problem_json_when_text_is_asked_for(api, cast, heartbeat, accept):
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    url = f"/api/v1/endpoints/{heartbeat.id}/pings/{uuid4()}/body"

    assert_problem(api.as_user(cast.owner).get(url, **headers), 404, "not_found")
    assert_problem(api.as_user(None).get(url, **headers), 401, "not_authenticated")


def test_a_cut_body_answers_its_first_100_kb(api, client, cast, heartbeat):
    client.post(slug_url(cast), data=b"x" * 200_000, content_type="text/plain")
    response = api.as_user(cast.owner).get(body_url(heartbeat, Ping.objects.get()))
    assert response.content == b"x" * 100_000


def test_a_ping_without_a_body_answers_empty(api, client, cast, heartbeat):
    client.get(slug_url(cast))
    response = api.as_user(cast.owner).get(body_url(heartbeat, Ping.objects.get()))
    assert response.status_code == 200
    assert response.content == b""


def test_a_ping_of_another_endpoint_is_404(api, client, cast, heartbeat):
    other = Endpoint.objects.get(pk=create(api, cast, name="Other", slug="other").json()["id"])
    client.get(slug_url(cast, slug="other"))
    response = api.as_user(cast.owner).get(body_url(heartbeat, Ping.objects.get()))
    assert_problem(response, 404, "not_found")
    assert api.as_user(cast.owner).get(body_url(other, Ping.objects.get())).status_code == 200


def test_an_unknown_or_malformed_ping_id_is_404(api, cast, heartbeat):
    owner = api.as_user(cast.owner)
    base = f"/api/v1/endpoints/{heartbeat.id}/pings"
    assert_problem(owner.get(f"{base}/{uuid4()}/body"), 404, "not_found")
    assert_problem(owner.get(f"{base}/not-a-uuid/body"), 404, "not_found")


def test_a_foreign_endpoints_ping_body_is_404(api, client, cast, heartbeat):
    client.post(slug_url(cast), data="secret", content_type="text/plain")
    response = api.as_user(cast.outsider).get(body_url(heartbeat, Ping.objects.get()))
    assert_problem(response, 404, "not_found")
    assert b"secret" not in response.content


def test_a_member_without_the_project_is_404(api, client, cast, heartbeat, make_user):
    stranger = make_user(cast.org, "stranger@acme.test")
    client.get(slug_url(cast))
    response = api.as_user(stranger).get(body_url(heartbeat, Ping.objects.get()))
    assert_problem(response, 404, "not_found")


def test_reading_a_body_needs_a_login(api, client, cast, heartbeat):
    client.get(slug_url(cast))
    response = api.as_user(None).get(body_url(heartbeat, Ping.objects.get()))
    assert_problem(response, 401, "not_authenticated")


def test_a_key_needs_endpoint_read_for_a_body(api, client, cast, heartbeat, make_key):
    client.post(slug_url(cast), data="done", content_type="text/plain")
    url = body_url(heartbeat, Ping.objects.get())
    assert api.with_key(make_key(cast.member, "endpoint:read")).get(url).content == b"done"
    refused = api.with_key(make_key(cast.member, "incident:read")).get(url)
    assert_problem(refused, 403, "insufficient_scope")


def test_a_key_without_admin_may_not_rotate_the_key(api, cast, heartbeat, make_key):
    key = make_key(cast.owner, "endpoint:read", "endpoint:create")
    response = api.with_key(key).post(f"/api/v1/projects/{cast.project.id}/rotate-ping-key")
    assert_problem(response, 403, "insufficient_scope")

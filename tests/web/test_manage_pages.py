"""Managing endpoints, API keys and projects from the pages: the API's validation and
services behind the forms, and secrets (targets, keys) never shown back."""

import hashlib
import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import Project
from alerts.models import NotificationChannel
from apikeys.models import ApiKey
from monitoring.api.serializers import EndpointSerializer
from monitoring.models import CheckResult, Endpoint, EndpointStatus, EndpointType, Incident
from monitoring.validation import option_names, validate_config
from monitoring.views import CONFIG_EXAMPLES
from tests.web.conftest import Markup, form_values, html, visible_text

SECRET_TARGET = "https://monitor:s3cret-pw@api.test/health?token=t0ken-value&env=prod"
MASKED_TARGET = "https://monitor:****@api.test/health?token=****&env=prod"
SECRET_CONFIG = {"headers": {"Authorization": "Bearer hdr-s3cret-value"}}
SECRETS = ["s3cret-pw", "t0ken-value", "hdr-s3cret-value"]


def browser_form(in_project, **changes):
    """The new-endpoint form as a browser posts it: every field, blanks included."""
    form = {
        "project": str(in_project.pk),
        "name": "Payments API",
        "type": "http",
        "target": "https://payments.test/health",
        "interval_seconds": "60",
        "timeout_seconds": "",
        "failure_threshold": "2",
        "recovery_threshold": "1",
        "sla_target": "99.9",
        "config": "",
        "enabled": "true",
    }
    form.update(changes)
    return {name: value for name, value in form.items() if value is not None}


# --- Create ------------------------------------------------------------------------------------


def test_the_new_endpoint_form_preselects_a_project(pages, cast):
    spare = Project.objects.create(organization=cast.org, name="Spare")

    response = pages.as_user(cast.owner).get(f"/endpoints/new?project={spare.pk}")

    values = form_values(response, "/endpoints/new")
    assert values["project"] == str(spare.pk)
    assert values["interval_seconds"] == "60"
    assert values["sla_target"] == "99.9"
    assert values["enabled"] == "true"


def test_create_redirects_to_the_new_endpoints_page_with_the_values(pages, cast):
    response = pages.as_user(cast.member).post(
        "/endpoints/new",
        browser_form(
            cast.project,
            interval_seconds="120",
            timeout_seconds="30",
            failure_threshold="3",
            recovery_threshold="2",
            sla_target="99.95",
            config='{"method": "HEAD", "expected_status": [200, 204]}',
        ),
    )

    endpoint = Endpoint.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/endpoints/{endpoint.pk}"
    assert (endpoint.project, endpoint.name, endpoint.type) == (
        cast.project,
        "Payments API",
        "http",
    )
    assert endpoint.target == "https://payments.test/health"
    assert (endpoint.interval_seconds, endpoint.timeout_seconds) == (120, 30)
    assert (endpoint.failure_threshold, endpoint.recovery_threshold) == (3, 2)
    assert endpoint.sla_target == 99.95
    assert endpoint.config["method"] == "HEAD"
    assert endpoint.config["expected_status"] == [200, 204]
    assert endpoint.enabled
    page = pages.get(response["Location"])
    assert "Payments API is monitored now." in visible_text(page)


def test_a_blank_config_and_timeout_take_the_defaults(pages, cast):
    pages.as_user(cast.owner).post("/endpoints/new", browser_form(cast.project))

    endpoint = Endpoint.objects.get()
    assert endpoint.config == validate_config("http", {})
    assert endpoint.timeout_seconds == 10
    assert endpoint.next_check_at is not None


def test_an_unchecked_start_box_creates_a_paused_endpoint(pages, cast):
    pages.as_user(cast.owner).post("/endpoints/new", browser_form(cast.project, enabled=None))

    endpoint = Endpoint.objects.get()
    assert not endpoint.enabled
    assert endpoint.status == EndpointStatus.PAUSED


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"target": "ftp://x"}, "target", "A http target must start with http:// or https://."),
        ({"target": "https://evil.test\\@good.test/"}, "target", ""),
        ({"target": "https://example.test:70000/"}, "target", ""),
        ({"target": "example.test/health"}, "target", "Use a URL starting with http://"),
        ({"target": "https://exa mple.test/"}, "target", "Spaces, control and non-ASCII"),
        ({"type": "grpc", "target": "http://g.test:1"}, "target", "grpc://"),
        (
            {"type": "postgresql", "target": "postgresql://app@db.test/app?host=evil.test"},
            "target",
            "Unsupported option 'host'",
        ),
        ({"target": ""}, "target", "This field may not be blank."),
        ({"name": ""}, "name", "This field may not be blank."),
        ({"type": "ftp"}, "type", '"ftp" is not a valid choice.'),
        ({"interval_seconds": "5"}, "interval_seconds", "greater than or equal to 10"),
        ({"interval_seconds": "abc"}, "interval_seconds", "A valid integer is required."),
        ({"interval_seconds": "30", "timeout_seconds": "30"}, "timeout_seconds", ""),
        ({"sla_target": "99.5"}, "sla_target", "is not a valid choice."),
        ({"config": "{not json"}, "config", "Value must be valid JSON."),
        ({"config": '{"method": "BREW"}'}, "config", "method"),
        ({"project": "not-a-uuid"}, "project", "object does not exist"),
    ],
)
def test_invalid_input_is_a_400_with_the_apis_message_and_creates_nothing(
    pages, api, cast, changes, field, message
):
    form = browser_form(cast.project, **changes)

    response = pages.as_user(cast.owner).post("/endpoints/new", form)

    assert response.status_code == 400
    assert message in visible_text(response)
    assert not Endpoint.objects.exists()
    assert form_values(response, "/endpoints/new")["name"] == form["name"]  # kept as typed
    body = {k: v for k, v in form.items() if k not in ("enabled", "config") and v != ""}
    body["target"], body["name"] = form["target"], form["name"]
    if form["config"]:
        try:
            body["config"] = json.loads(form["config"])
        except ValueError:
            return  # JSON syntax is the page's own concern: the API reads JSON bodies
    answer = api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")
    assert answer.status_code == 400
    errors = answer.json()["errors"]
    assert any(key == field or key.startswith(f"{field}.") for key in errors), errors
    for api_message in _flat(errors):
        assert api_message in visible_text(response), api_message


def _flat(messages):
    if isinstance(messages, dict):
        return [item for inner in messages.values() for item in _flat(inner)]
    if isinstance(messages, list):
        return [item for inner in messages for item in _flat(inner)]
    return [messages]


# --- Edit --------------------------------------------------------------------------------------


@pytest.fixture
def secret_endpoint(cast, make_endpoint):
    return make_endpoint(
        cast.project, name="Secret API", target=SECRET_TARGET, config=SECRET_CONFIG
    )


def test_the_edit_form_shows_the_values_with_secrets_masked(pages, cast, secret_endpoint):
    response = pages.as_user(cast.owner).get(f"/endpoints/{secret_endpoint.pk}/edit")

    values = form_values(response, f"/endpoints/{secret_endpoint.pk}/edit")
    assert values["target"] == MASKED_TARGET
    assert json.loads(values["config"])["headers"]["Authorization"] == "****"
    assert values["name"] == "Secret API"
    assert values["project"] == str(cast.project.pk)
    assert values["type"] == "http"
    for secret in SECRETS:
        assert secret not in html(response)


def test_posting_the_edit_form_back_keeps_the_secrets(pages, cast, secret_endpoint):
    url = f"/endpoints/{secret_endpoint.pk}/edit"
    pages.as_user(cast.member)
    values = form_values(pages.get(url), url)

    response = pages.post(url, {**values, "name": "Renamed API", "interval_seconds": "300"})

    assert response.status_code == 302
    assert response["Location"] == f"/endpoints/{secret_endpoint.pk}"
    secret_endpoint.refresh_from_db()
    assert secret_endpoint.name == "Renamed API"
    assert secret_endpoint.interval_seconds == 300
    assert secret_endpoint.target == SECRET_TARGET
    assert secret_endpoint.target_masked == MASKED_TARGET
    assert secret_endpoint.config["headers"]["Authorization"] == "Bearer hdr-s3cret-value"


def test_a_masked_password_cannot_follow_the_target_to_another_host(pages, cast, secret_endpoint):
    url = f"/endpoints/{secret_endpoint.pk}/edit"
    pages.as_user(cast.owner)
    values = form_values(pages.get(url), url)

    response = pages.post(url, {**values, "target": MASKED_TARGET.replace("api.test", "evil.test")})

    assert response.status_code == 400
    assert "Enter the password again" in visible_text(response)
    secret_endpoint.refresh_from_db()
    assert secret_endpoint.target == SECRET_TARGET


def test_a_new_host_needs_the_config_secrets_again(pages, cast, secret_endpoint):
    url = f"/endpoints/{secret_endpoint.pk}/edit"
    pages.as_user(cast.owner)
    values = form_values(pages.get(url), url)

    kept = pages.post(url, {**values, "target": "https://other.test/ping"})
    config = {**json.loads(values["config"]), "headers": {"Authorization": "Bearer new-one"}}
    retyped = pages.post(
        url, {**values, "target": "https://other.test/ping", "config": json.dumps(config)}
    )

    assert kept.status_code == 400
    assert "Enter the secret values again: the target points elsewhere now." in visible_text(kept)
    assert retyped.status_code == 302
    secret_endpoint.refresh_from_db()
    assert secret_endpoint.target == "https://other.test/ping"
    assert secret_endpoint.config["headers"]["Authorization"] == "Bearer new-one"


def test_a_new_target_replaces_the_old_one(pages, cast, make_endpoint):
    endpoint = make_endpoint(cast.project, target="https://bot:hunter2@example.test/")
    url = f"/endpoints/{endpoint.pk}/edit"
    pages.as_user(cast.owner)
    values = form_values(pages.get(url), url)

    pages.post(url, {**values, "target": "https://other.test/ping"})

    endpoint.refresh_from_db()
    assert endpoint.target == endpoint.target_masked == "https://other.test/ping"


def test_an_invalid_edit_is_a_400_and_changes_nothing(pages, cast, secret_endpoint):
    url = f"/endpoints/{secret_endpoint.pk}/edit"
    pages.as_user(cast.owner)
    values = form_values(pages.get(url), url)

    response = pages.post(url, {**values, "name": "Changed", "target": "ftp://x"})

    assert response.status_code == 400
    assert "A http target must start with http:// or https://." in visible_text(response)
    secret_endpoint.refresh_from_db()
    assert secret_endpoint.name == "Secret API"
    assert secret_endpoint.target == SECRET_TARGET
    for secret in SECRETS:
        assert secret not in html(response)


def test_a_blank_config_on_edit_keeps_the_current_one(pages, cast, secret_endpoint):
    url = f"/endpoints/{secret_endpoint.pk}/edit"
    pages.as_user(cast.owner)
    values = form_values(pages.get(url), url)

    pages.post(url, {**values, "config": "  "})

    secret_endpoint.refresh_from_db()
    assert secret_endpoint.config["headers"]["Authorization"] == "Bearer hdr-s3cret-value"


def test_target_secrets_never_appear_on_any_page(pages, cast, secret_endpoint, record):
    soon = timezone.now() + timedelta(seconds=1)
    record(secret_endpoint, [(soon, False, 5.0), (soon + timedelta(minutes=1), False, 5.0)])
    pages.as_user(cast.owner)
    pk = secret_endpoint.pk
    for url in [
        "/",
        f"/endpoints/{pk}",
        f"/endpoints/{pk}?period=7d",
        f"/endpoints/{pk}?period=30d",
        f"/endpoints/{pk}/edit",
        f"/compare?endpoints={pk}",
        "/projects",
        "/endpoints/new",
    ]:
        response = pages.get(url)
        assert response.status_code == 200, url
        for secret in SECRETS:
            assert secret not in html(response), (url, secret)
    assert MASKED_TARGET.replace("&", "&amp;") in html(pages.get(f"/endpoints/{pk}"))


def test_the_target_is_stored_encrypted(pages, cast):
    pages.as_user(cast.owner).post(
        "/endpoints/new", browser_form(cast.project, target=SECRET_TARGET)
    )

    with connection.cursor() as cursor:
        cursor.execute("SELECT target FROM monitoring_endpoint")
        (stored,) = cursor.fetchone()
    assert "s3cret-pw" not in stored
    assert Endpoint.objects.get().target == SECRET_TARGET


# --- Pause, resume, check now, delete ----------------------------------------------------------


def test_pause_and_resume(pages, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    pages.as_user(cast.member)

    paused = pages.post(f"/endpoints/{endpoint.pk}/pause")
    endpoint.refresh_from_db()
    assert (endpoint.enabled, endpoint.status) == (False, EndpointStatus.PAUSED)
    resumed = pages.post(f"/endpoints/{endpoint.pk}/resume")
    endpoint.refresh_from_db()

    assert paused.status_code == resumed.status_code == 302
    assert paused["Location"] == f"/endpoints/{endpoint.pk}"
    assert endpoint.enabled
    assert endpoint.status != EndpointStatus.PAUSED
    assert "Website is resumed." in visible_text(pages.get(resumed["Location"]))


@pytest.mark.parametrize("action", ["pause", "resume", "check-now", "delete", "edit"])
def test_endpoint_actions_are_post_only(pages, cast, make_endpoint, action):
    endpoint = make_endpoint(cast.project)

    response = pages.as_user(cast.owner).get(f"/endpoints/{endpoint.pk}/{action}")

    if action == "edit":
        assert response.status_code == 200  # the form itself
    else:
        assert response.status_code == 405
    endpoint.refresh_from_db()
    assert endpoint.enabled


def test_delete_removes_the_endpoint_with_its_history(pages, cast, make_endpoint, record):
    endpoint = make_endpoint(cast.project, name="Doomed")
    soon = timezone.now() + timedelta(seconds=1)
    record(endpoint, [(soon, False, 1.0), (soon + timedelta(minutes=1), False, 1.0)])
    assert Incident.objects.exists()

    response = pages.as_user(cast.member).post(f"/endpoints/{endpoint.pk}/delete")

    assert response.status_code == 302
    assert response["Location"] == "/"
    assert not Endpoint.objects.exists()
    assert not CheckResult.objects.exists()
    assert not Incident.objects.exists()
    assert "Doomed is deleted with its history." in visible_text(pages.get("/"))


def test_check_now_runs_a_check(pages, cast, make_endpoint, http_peer, settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    endpoint = make_endpoint(cast.project, target=http_peer.url("/health"))

    response = pages.as_user(cast.member).post(f"/endpoints/{endpoint.pk}/check-now")

    assert response.status_code == 302
    assert response["Location"] == f"/endpoints/{endpoint.pk}"
    assert CheckResult.objects.get(endpoint=endpoint).ok
    page = pages.get(response["Location"])
    assert "A check of Website is queued." in visible_text(page)
    assert "Up" in visible_text(page)


def test_check_now_twice_in_a_row_says_to_wait(pages, cast, make_endpoint, http_peer, settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    endpoint = make_endpoint(cast.project, target=http_peer.url("/health"))
    pages.as_user(cast.owner)
    pages.post(f"/endpoints/{endpoint.pk}/check-now")
    pages.get(f"/endpoints/{endpoint.pk}")  # shows (and clears) the first message

    again = pages.post(f"/endpoints/{endpoint.pk}/check-now")

    assert again.status_code == 302
    assert "Request was throttled" in visible_text(pages.get(again["Location"]))
    assert CheckResult.objects.count() == 1


def test_check_now_of_a_paused_endpoint_says_so(pages, cast, make_endpoint):
    endpoint = make_endpoint(cast.project, enabled=False)

    response = pages.as_user(cast.owner).post(f"/endpoints/{endpoint.pk}/check-now")

    text = visible_text(pages.get(response["Location"]))
    assert "The endpoint is paused: resume it to check it." in text
    assert "is queued" not in text
    assert not CheckResult.objects.exists()


# --- API keys ----------------------------------------------------------------------------------

KEY = re.compile(r"hm_live_[A-Za-z0-9_\-]{20,}")
SHOWN = re.compile(r'<code class="secret" id="new-key-value">([^<]*)</code>')


def stored_prefix(key):
    return ApiKey.objects.get().prefix


def shown_key(response):
    return SHOWN.search(html(response)).group(1)


def create_key(pages, name="ci", scopes=("endpoint:read",), **extra):
    return pages.post("/api-keys/new", {"name": name, "scopes": list(scopes), **extra})


def test_a_new_key_is_shown_once_and_never_cached(pages, api, cast):
    pages.as_user(cast.member)

    response = create_key(pages, scopes=["endpoint:read", "analytics:read"])

    assert response.status_code == 200
    key = SHOWN.search(html(response)).group(1)
    assert KEY.fullmatch(key)
    cache_control = response["Cache-Control"]
    assert "no-store" in cache_control
    assert "no-cache" in cache_control
    assert "Copy it now" in visible_text(response)
    later = pages.get("/api-keys")
    assert key not in html(later)
    assert not SHOWN.search(html(later))
    assert f"{stored_prefix(key)}…" in html(later)
    stored = ApiKey.objects.get()
    assert (stored.name, stored.scopes, stored.created_by) == (
        "ci",
        ["endpoint:read", "analytics:read"],
        cast.member,
    )
    row = [str(value) for value in ApiKey.objects.values_list().get()]
    assert not any(key in value or key.split("_live_")[1] in value for value in row)
    assert stored.digest == hashlib.sha256(key.encode()).hexdigest()
    assert api.with_key(key).get("/api/v1/projects").status_code == 200


def test_a_key_works_only_with_its_scopes(pages, api, cast):
    key = shown_key(create_key(pages.as_user(cast.owner), scopes=["incident:read"]))

    assert api.with_key(key).get("/api/v1/incidents").status_code == 200
    assert api.with_key(key).get("/api/v1/endpoints").status_code == 403


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"name": "no scopes"}, "This field is required."),
        ({"name": "x", "scopes": ["root"]}, '"root" is not a valid choice.'),
        ({"name": "", "scopes": ["admin"]}, "This field may not be blank."),
        (
            {"name": "old", "scopes": ["admin"], "expires_at": "2000-01-01T00:00"},
            "",
        ),
        ({"name": "x", "scopes": ["admin"], "expires_at": "soon"}, "Datetime has wrong format."),
    ],
)
def test_an_invalid_key_form_is_a_400_and_creates_nothing(pages, cast, form, message):
    response = pages.as_user(cast.owner).post("/api-keys/new", form)

    assert response.status_code == 400
    assert message in visible_text(response)
    assert not ApiKey.objects.exists()
    assert not SHOWN.search(html(response))


def test_a_key_with_an_expiry_is_created(pages, cast):
    response = create_key(pages.as_user(cast.owner), expires_at="2099-01-01T10:30")

    assert response.status_code == 200
    assert ApiKey.objects.get().expires_at.isoformat() == "2099-01-01T10:30:00+00:00"


def test_revoke_makes_the_key_answer_401(pages, api, cast):
    pages.as_user(cast.owner)
    key = shown_key(create_key(pages))
    stored = ApiKey.objects.get()

    response = pages.post(f"/api-keys/{stored.pk}/revoke")

    assert response.status_code == 302
    assert response["Location"] == "/api-keys"
    stored.refresh_from_db()
    assert stored.revoked_at is not None
    assert api.with_key(key).get("/api/v1/projects").status_code == 401
    listing = pages.get("/api-keys")
    assert "The key ci is revoked." in visible_text(listing)
    assert f"/api-keys/{stored.pk}/revoke" not in html(listing)
    assert pages.post(f"/api-keys/{stored.pk}/revoke").status_code == 404


def test_an_admin_revokes_a_members_key(pages, api, cast):
    key = shown_key(create_key(pages.as_user(cast.member)))

    pages.as_user(cast.admin).post(f"/api-keys/{ApiKey.objects.get().pk}/revoke")

    assert api.with_key(key).get("/api/v1/projects").status_code == 401


# --- Projects ----------------------------------------------------------------------------------


def test_projects_create_rename_delete(pages, cast):
    pages.as_user(cast.admin)

    created = pages.post("/projects/new", {"name": "Payments"})
    project = Project.objects.get(name="Payments")
    renamed = pages.post(f"/projects/{project.pk}/rename", {"name": "Billing"})
    project.refresh_from_db()
    assert project.name == "Billing"
    deleted = pages.post(f"/projects/{project.pk}/delete")

    assert created.status_code == renamed.status_code == deleted.status_code == 302
    assert created["Location"] == "/projects"
    assert project.organization == cast.org
    assert not Project.objects.filter(pk=project.pk).exists()
    assert "Project Billing deleted." in visible_text(pages.get("/projects"))


def test_a_duplicate_project_name_is_a_409(pages, cast):
    other = Project.objects.create(organization=cast.org, name="Other")
    pages.as_user(cast.owner)

    created = pages.post("/projects/new", {"name": "DEFAULT"})
    renamed = pages.post(f"/projects/{other.pk}/rename", {"name": "default"})

    for response in (created, renamed):
        assert response.status_code == 409
        assert "A project with this name already exists." in visible_text(response)
    assert sorted(Project.objects.filter(organization=cast.org).values_list("name", flat=True)) == [
        "Default",
        "Other",
    ]


def test_the_same_project_name_is_fine_in_another_org(pages, cast):
    response = pages.as_user(cast.outsider).post("/projects/new", {"name": "Payments"})
    pages.as_user(cast.owner).post("/projects/new", {"name": "Payments"})

    assert response.status_code == 302
    assert Project.objects.filter(name="Payments").count() == 2


def test_a_project_with_endpoints_is_not_deleted(pages, cast, make_endpoint):
    make_endpoint(cast.project)

    response = pages.as_user(cast.owner).post(f"/projects/{cast.project.pk}/delete")

    assert response.status_code == 409
    assert "Delete or move this project's endpoints first." in visible_text(response)
    assert Project.objects.filter(pk=cast.project.pk).exists()
    assert Endpoint.objects.count() == 1


def test_a_blank_project_name_is_a_400(pages, cast):
    response = pages.as_user(cast.owner).post("/projects/new", {"name": "   "})

    assert response.status_code == 400
    assert "This field may not be blank." in visible_text(response)
    assert Project.objects.filter(organization=cast.org).count() == 1


def test_projects_page_counts_endpoints(pages, cast, make_endpoint):
    make_endpoint(cast.project, name="a")
    make_endpoint(cast.project, name="b")

    response = pages.as_user(cast.member).get("/projects")

    assert "Default 2" in visible_text(response)


# --- The form's fields: constraints, errors beside them, the options' help -------------------


def _inputs(response):
    return {tag["name"]: tag for tag in Markup(html(response)).find("input") if tag.get("name")}


def _beside(response, field):
    """The markup of a field's own cell: its input or box, and what follows until the next."""
    match = re.search(rf'id="{field}".*?(?=<label|</div>|<details)', html(response), re.S)
    assert match, field
    return match.group(0)


@pytest.mark.parametrize("minimum", [10, 30])
def test_the_html_constraints_are_the_servers(pages, cast, settings, minimum):
    settings.MIN_CHECK_INTERVAL = minimum
    fields = EndpointSerializer(context={"request": None}).fields

    inputs = _inputs(pages.as_user(cast.owner).get("/endpoints/new"))

    for name in ("interval_seconds", "timeout_seconds", "failure_threshold", "recovery_threshold"):
        assert inputs[name]["min"] == str(fields[name].min_value), name
        assert inputs[name]["max"] == str(fields[name].max_value), name
    assert inputs["interval_seconds"]["min"] == str(minimum)
    assert "maxlength" not in inputs["name"]  # a browser would cut a longer name silently
    assert inputs["name"]["pattern"] == f".{{1,{fields['name'].max_length}}}"
    assert inputs["target"]["pattern"] == f".{{1,{fields['target'].max_length}}}"
    assert "required" in inputs["name"]


def test_a_name_longer_than_the_limit_is_refused_not_cut(pages, cast):
    long_name = "n" * 201

    response = pages.as_user(cast.owner).post(
        "/endpoints/new", browser_form(cast.project, name=long_name)
    )

    assert response.status_code == 400
    assert not Endpoint.objects.exists()
    assert form_values(response, "/endpoints/new")["name"] == long_name
    assert "Ensure this field has no more than 200 characters." in _beside(response, "name")


def test_each_error_shows_beside_its_field_with_its_label(pages, cast):
    form = browser_form(
        cast.project, interval_seconds="5", failure_threshold="0", recovery_threshold="11"
    )

    response = pages.as_user(cast.owner).post("/endpoints/new", form)

    assert response.status_code == 400
    expected = {
        "interval_seconds": "Ensure this value is greater than or equal to 10.",
        "failure_threshold": "Ensure this value is greater than or equal to 1.",
        "recovery_threshold": "Ensure this value is less than or equal to 10.",
    }
    inputs = _inputs(response)
    for field, message in expected.items():
        assert message in _beside(response, field), field
        assert inputs[field]["aria-describedby"] == f"{field}-errors"
    text = visible_text(response)
    assert "Interval (s): Ensure this value is greater than or equal to 10." in text
    assert "Failures to open an incident: Ensure this value is greater than" in text


def test_a_timeout_not_below_the_interval_names_the_interval(pages, cast):
    form = browser_form(cast.project, interval_seconds="30", timeout_seconds="30")

    response = pages.as_user(cast.owner).post("/endpoints/new", form)

    assert response.status_code == 400
    assert "Must be less than the interval (30 s)." in _beside(response, "timeout_seconds")
    assert "interval_seconds" not in visible_text(response)


def test_every_bad_field_is_named_in_one_answer(pages, cast):
    form = browser_form(cast.project, name="", target="ftp://x", interval_seconds="1")

    response = pages.as_user(cast.owner).post("/endpoints/new", form)

    assert response.status_code == 400
    for field in ("name", "target", "interval_seconds"):
        assert "field-errors" in _beside(response, field), field


def test_the_options_box_has_a_filled_example_and_the_keys_of_each_type(pages, cast):
    response = pages.as_user(cast.owner).get("/endpoints/new")

    markup = Markup(html(response))
    (box,) = [tag for tag in markup.find("textarea") if tag.get("name") == "config"]
    validate_config("http", json.loads(box["placeholder"]))
    sections = markup.find("section")
    assert {section["data-type"] for section in sections} == set(EndpointType.values)
    text = visible_text(response)
    for section in sections:
        validate_config(section["data-type"], json.loads(section["data-example"]))
        for name in option_names(section["data-type"]):
            assert name in text
    scripts = [tag["src"] for tag in markup.find("script") if tag.get("src")]
    assert any("monitoring/endpoint_form." in src for src in scripts)


def test_the_edit_form_shows_the_example_of_the_endpoints_type(pages, cast, make_endpoint):
    endpoint = make_endpoint(cast.project, type="redis", target="redis://cache.test:6379/0")

    response = pages.as_user(cast.owner).get(f"/endpoints/{endpoint.pk}/edit")

    (box,) = [tag for tag in Markup(html(response)).find("textarea") if tag.get("name") == "config"]
    assert json.loads(box["placeholder"]) == CONFIG_EXAMPLES["redis"]


# --- Every other form: a browser flags an over-long value, the server refuses it --------------

LONG = "n" * 201
FORM_PAGES = ["/register", "/projects", "/api-keys", "/alerts"]


@pytest.mark.parametrize("url", FORM_PAGES)
def test_no_form_lets_a_browser_cut_a_value_short(pages, cast, url):
    user = None if url == "/register" else cast.owner
    markup = html(pages.as_user(user).get(url))

    assert "maxlength" not in markup
    assert 'pattern=".{1,200}"' in markup


@pytest.mark.parametrize(
    ("url", "form", "rows"),
    [
        ("/projects/new", {"name": LONG}, lambda: Project.objects.count()),
        ("/api-keys/new", {"name": LONG, "scopes": ["endpoint:read"]}, ApiKey.objects.count),
        (
            "/alerts/channels/new",
            {"name": LONG, "kind": "slack", "url": "https://hooks.slack.com/services/T0/B0/x"},
            lambda: NotificationChannel.objects.count(),
        ),
    ],
)
def test_an_over_long_name_is_refused_by_every_form(pages, cast, url, form, rows):
    before = rows()

    response = pages.as_user(cast.owner).post(url, form)

    assert response.status_code == 400
    # DRF's wording on the pages that share the API's validation, Django's on the others.
    assert re.search(r"(no more than|at most) 200 characters", visible_text(response))
    assert rows() == before


def test_the_form_pages_title_is_text_only(pages, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    for url in ("/endpoints/new", f"/endpoints/{endpoint.pk}/edit"):
        title = re.search(r"<title>(.*?)</title>", html(pages.as_user(cast.owner).get(url)), re.S)
        assert title, url
        assert "<" not in title.group(1), title.group(1)


def test_a_heartbeat_is_created_and_edited_from_the_form_without_a_target(pages, cast):
    form = browser_form(cast.project, name="Nightly backup", type="heartbeat", target="")

    created = pages.as_user(cast.owner).post("/endpoints/new", form)

    assert created.status_code == 302, visible_text(created)
    heartbeat = Endpoint.objects.get(name="Nightly backup")
    assert heartbeat.type == EndpointType.HEARTBEAT
    assert heartbeat.ping_key is not None
    # The edit form shows the heartbeat's thresholds, 1, and posts them back.
    again = {**form, "interval_seconds": "3600", "failure_threshold": "1"}
    edited = pages.post(f"/endpoints/{heartbeat.pk}/edit", again)
    assert edited.status_code == 302, visible_text(edited)
    heartbeat.refresh_from_db()
    assert heartbeat.interval_seconds == 3600

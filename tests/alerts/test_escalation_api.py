"""The escalation policies API: the contract's shape, who reads and writes, every bad field
named at once (with the step it is in), foreign ids refused, and the audit log."""

import uuid
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from accounts.models import AuditEvent
from accounts.services import project_create
from alerts import services
from alerts.escalation_validation import StepInput
from alerts.models import Escalation, EscalationPolicy, EscalationStep
from alerts.services import escalations_run
from monitoring.models import Incident
from tests.helpers import assert_problem, queries_of_get

pytestmark = pytest.mark.django_db

URL = "/api/v1/escalation-policies"


def channel(organization, name="Ops"):
    return services.channel_create(
        organization=organization,
        name=name,
        kind="email",
        config={"addresses": [f"{name.lower()}@example.com"], "to_members": False},
    )


def body(*channels, **fields):
    first, *rest = channels
    steps = [{"after_minutes": 0, "channels": [str(first.pk)]}]
    steps += [{"after_minutes": 5 * (n + 1), "channels": [str(c.pk)]} for n, c in enumerate(rest)]
    return {"name": "On-call", "steps": steps, "repeat_every_minutes": 30, **fields}


def make_policy(cast, name="On-call", **fields):
    return services.escalation_policy_create(
        organization=cast.org,
        name=name,
        steps=[StepInput(0, (channel(cast.org, f"{name} mail"),))],
        **fields,
    )


def test_an_owner_creates_a_policy_and_reads_it_back_in_the_contract_shape(api, cast):
    ops, boss = channel(cast.org, "Ops"), channel(cast.org, "Boss")

    response = api.as_user(cast.owner).post(URL, body(ops, boss), format="json")

    assert response.status_code == 201, response.content
    created = response.json()
    assert set(created) == {
        "id",
        "name",
        "steps",
        "repeat_every_minutes",
        "projects",
        "endpoints",
        "created_at",
    }
    assert created["steps"] == [
        {"after_minutes": 0, "channels": [str(ops.pk)]},
        {"after_minutes": 5, "channels": [str(boss.pk)]},
    ]
    assert (created["repeat_every_minutes"], created["projects"], created["endpoints"]) == (
        30,
        [],
        [],
    )
    assert api.get(f"{URL}/{created['id']}").json() == created
    event = AuditEvent.objects.get(action="escalation_policy.created")
    assert (event.actor, event.target_id) == (cast.owner, created["id"])


def test_every_bad_field_is_named_at_once_and_nothing_is_written(api, cast):
    ops = channel(cast.org)
    payload = {
        "name": " ",
        "steps": [
            {"after_minutes": 10, "channels": [str(ops.pk)]},
            {"after_minutes": 10, "channels": []},
            {"after_minutes": -1, "channels": ["nope"], "wait": 1},
            "later",
        ],
        "repeat_every_minutes": 0,
    }

    response = api.as_user(cast.admin).post(URL, payload, format="json")

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert set(errors) == {
        "name",
        "steps[1].after_minutes",
        "steps[1].channels",
        "steps[2].after_minutes",
        "steps[2].channels",
        "steps[2].wait",
        "steps[3]",
        "repeat_every_minutes",
    }
    assert errors["steps[1].after_minutes"] == ["Must be later than the step before (10 min)."]
    assert errors["steps[1].channels"] == ["Give at least one channel."]
    assert not EscalationPolicy.objects.exists()


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([], "Give at least one step."),
        ([{"after_minutes": n, "channels": ["x"]} for n in range(11)], "At most 10 steps."),
        ({"after_minutes": 0}, "Expected a list of steps."),
        (None, "This field may not be null."),
    ],
)
def test_the_number_of_steps_is_one_to_ten(api, cast, steps, message):
    response = api.as_user(cast.owner).post(URL, {"name": "x", "steps": steps}, format="json")

    assert assert_problem(response, 400, "validation_error")["errors"] == {"steps": [message]}


def test_delays_and_reminders_stay_within_a_week(api, cast):
    ops = channel(cast.org)
    late = body(ops, repeat_every_minutes=10_081)
    late["steps"][0]["after_minutes"] = 10_081

    errors = assert_problem(
        api.as_user(cast.owner).post(URL, late, format="json"), 400, "validation_error"
    )["errors"]

    assert set(errors) == {"steps[0].after_minutes", "repeat_every_minutes"}
    ok = body(ops, repeat_every_minutes=None)
    ok["steps"][0]["after_minutes"] = 10_080
    assert api.post(URL, ok, format="json").status_code == 201


def test_ids_of_another_organization_are_refused_naming_the_field(api, cast, make_endpoint):
    ops, theirs = channel(cast.org), channel(cast.other_org, "Theirs")
    foreign_endpoint = make_endpoint(cast.other_project)
    payload = body(ops, theirs, projects=[str(cast.other_project.pk)])
    payload["endpoints"] = [str(foreign_endpoint.pk)]

    response = api.as_user(cast.owner).post(URL, payload, format="json")

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert set(errors) == {"steps[1].channels", "projects", "endpoints"}
    assert errors["steps[1].channels"] == [f"No such channel in this organization: {theirs.pk}."]
    assert not EscalationPolicy.objects.exists()


def test_no_credentials_is_a_401(api, cast):
    policy = make_policy(cast)
    for response in (api.get(URL), api.get(f"{URL}/{policy.pk}"), api.post(URL, {}, format="json")):
        assert_problem(response, 401, "not_authenticated")


def test_members_read_but_do_not_write(api, cast):
    policy = make_policy(cast)
    api.as_user(cast.member)

    assert [p["id"] for p in api.get(URL).json()["results"]] == [str(policy.pk)]
    assert api.get(f"{URL}/{policy.pk}").status_code == 200
    for response in (
        api.post(URL, body(channel(cast.org, "Mine")), format="json"),
        api.patch(f"{URL}/{policy.pk}", {"name": "Mine"}, format="json"),
        api.delete(f"{URL}/{policy.pk}"),
    ):
        assert_problem(response, 403, "permission_denied")
    assert list(EscalationPolicy.objects.values_list("name", flat=True)) == ["On-call"]


def test_a_member_does_not_see_a_policy_of_another_project(api, cast):
    hidden = project_create(organization=cast.org, name="Hidden")
    policy = make_policy(cast, name="Theirs", projects=[hidden])

    api.as_user(cast.member)

    assert api.get(URL).json()["results"] == []
    assert_problem(api.get(f"{URL}/{policy.pk}"), 404, "not_found")
    assert api.as_user(cast.admin).get(f"{URL}/{policy.pk}").json()["projects"] == [str(hidden.pk)]


def test_a_foreign_or_unknown_id_is_a_404(api, cast):
    policy = make_policy(cast)
    api.as_user(cast.outsider)

    for path in (f"{URL}/{policy.pk}", f"{URL}/{uuid.uuid4()}", f"{URL}/not-an-id"):
        assert_problem(api.get(path), 404, "not_found")
        assert_problem(api.patch(path, {"name": "Mine"}, format="json"), 404, "not_found")
        assert_problem(api.delete(path), 404, "not_found")
    assert api.get(URL).json()["results"] == []
    assert EscalationPolicy.objects.get().name == "On-call"


@pytest.mark.parametrize("scope", ["endpoint:read", "incident:read"])
def test_keys_need_the_admin_scope(api, cast, make_key, scope):
    policy = make_policy(cast)
    api.with_key(make_key(cast.owner, scope))

    for response in (
        api.get(URL),
        api.post(URL, body(channel(cast.org, "Keyed")), format="json"),
        api.patch(f"{URL}/{policy.pk}", {"name": "Keyed"}, format="json"),
        api.delete(f"{URL}/{policy.pk}"),
    ):
        assert_problem(response, 403, "insufficient_scope")
    assert (
        api.with_key(make_key(cast.owner, "admin"))
        .post(URL, body(channel(cast.org, "Admin")), format="json")
        .status_code
        == 201
    )


def test_a_patch_changes_what_it_sends_and_replaces_the_steps(api, cast):
    policy = make_policy(cast)
    other = channel(cast.org, "Other")
    api.as_user(cast.admin)

    renamed = api.patch(f"{URL}/{policy.pk}", {"name": "Renamed"}, format="json").json()
    assert renamed["name"] == "Renamed"
    assert renamed["repeat_every_minutes"] is None
    assert len(renamed["steps"]) == 1

    payload = {
        "steps": [{"after_minutes": 2, "channels": [str(other.pk)]}],
        "repeat_every_minutes": 60,
    }
    changed = api.patch(f"{URL}/{policy.pk}", payload, format="json").json()

    assert changed["steps"] == [{"after_minutes": 2, "channels": [str(other.pk)]}]
    assert changed["repeat_every_minutes"] == 60
    assert EscalationStep.objects.filter(policy=policy).count() == 1
    cleared = api.patch(f"{URL}/{policy.pk}", {"repeat_every_minutes": None}, format="json")
    assert cleared.json()["repeat_every_minutes"] is None
    details = [
        e.details["fields"]
        for e in AuditEvent.objects.filter(action="escalation_policy.updated").order_by(
            "created_at"
        )
    ]
    assert details == [["name"], ["repeat_every_minutes", "steps"], ["repeat_every_minutes"]]
    bad = api.patch(f"{URL}/{policy.pk}", {"steps": [], "name": ""}, format="json")
    assert set(assert_problem(bad, 400, "validation_error")["errors"]) == {"steps", "name"}


def test_deleting_stops_the_escalations_that_follow_it(api, cast, make_endpoint):
    policy = make_policy(cast)
    incident = Incident.objects.create(
        organization=cast.org, endpoint=make_endpoint(cast.project), started_at=timezone.now()
    )
    Escalation.objects.create(incident=incident, policy=policy, next_escalation_at=timezone.now())

    response = api.as_user(cast.owner).delete(f"{URL}/{policy.pk}")

    assert response.status_code == 204
    assert not EscalationPolicy.objects.exists()
    assert Escalation.objects.get().next_escalation_at is None
    assert AuditEvent.objects.filter(action="escalation_policy.deleted").count() == 1


def test_the_list_reads_a_bounded_number_of_queries(api, cast, make_endpoint):
    api.as_user(cast.owner)
    make_policy(cast, name="First", endpoints=[make_endpoint(cast.project)])
    few = queries_of_get(api, URL)
    for n in range(8):
        make_policy(cast, name=f"More {n}", projects=[cast.project])

    assert queries_of_get(api, URL) == few
    assert len(api.get(URL).json()["results"]) == 9


# --- Scope: projects and endpoints ------------------------------------------------------------


def test_a_policy_attached_to_projects_and_endpoints_reads_back_in_the_contract_shape(
    api, cast, make_endpoint
):
    other = project_create(organization=cast.org, name="Payments")
    near, far = make_endpoint(cast.project, name="Checkout"), make_endpoint(other, name="Cards")
    ops = channel(cast.org)
    payload = body(ops, projects=[str(cast.project.pk), str(other.pk)])
    payload["endpoints"] = [str(far.pk), str(near.pk)]

    response = api.as_user(cast.admin).post(URL, payload, format="json")

    assert response.status_code == 201, response.content
    created = response.json()
    assert created["projects"] == sorted([str(cast.project.pk), str(other.pk)])
    assert created["endpoints"] == sorted([str(near.pk), str(far.pk)])
    assert created["steps"] == [{"after_minutes": 0, "channels": [str(ops.pk)]}]
    assert api.get(f"{URL}/{created['id']}").json() == created
    assert api.get(URL).json()["results"] == [created]
    policy = EscalationPolicy.objects.get()
    assert set(policy.projects.all()) == {cast.project, other}
    assert set(policy.endpoints.all()) == {near, far}
    # A PATCH of one scope leaves the other as it was.
    narrowed = api.patch(f"{URL}/{policy.pk}", {"endpoints": [str(near.pk)]}, format="json")
    assert narrowed.status_code == 200, narrowed.content
    assert (narrowed.json()["projects"], narrowed.json()["endpoints"]) == (
        created["projects"],
        [str(near.pk)],
    )


@pytest.mark.parametrize("field", ["projects", "endpoints"])
def test_a_project_or_endpoint_of_another_organization_is_a_400_naming_the_field(
    api, cast, make_endpoint, field
):
    foreign = {
        "projects": lambda: cast.other_project,
        "endpoints": lambda: make_endpoint(cast.other_project, name="Theirs"),
    }[field]()
    api.as_user(cast.owner)

    created = api.post(URL, {**body(channel(cast.org)), field: [str(foreign.pk)]}, format="json")

    errors = assert_problem(created, 400, "validation_error")["errors"]
    assert set(errors) == {field}
    assert not EscalationPolicy.objects.exists()
    policy = make_policy(cast, projects=[cast.project])
    patched = api.patch(f"{URL}/{policy.pk}", {field: [str(foreign.pk)]}, format="json")
    assert set(assert_problem(patched, 400, "validation_error")["errors"]) == {field}
    assert list(policy.projects.all()) == [cast.project]
    assert not policy.endpoints.exists()
    unknown = api.patch(f"{URL}/{policy.pk}", {field: [str(uuid.uuid4())]}, format="json")
    assert set(assert_problem(unknown, 400, "validation_error")["errors"]) == {field}


def _policy_over_api(api, cast, name, address, **scope):
    """A one-step policy created over the API, paging a channel that hears nothing else."""
    mailbox = services.channel_create(
        organization=cast.org,
        name=name,
        kind="email",
        config={"addresses": [address], "to_members": False},
        events=[],
    )
    payload = {
        "name": name,
        "steps": [{"after_minutes": 0, "channels": [str(mailbox.pk)]}],
        **{key: [str(item.pk) for item in items] for key, items in scope.items()},
    }
    response = api.post(URL, payload, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


@pytest.mark.parametrize("endpoint_policy_first", [True, False])
def test_the_most_specific_policy_wins_endpoint_over_project_over_organization(
    api, cast, make_endpoint, go_down, django_capture_on_commit_callbacks, endpoint_policy_first
):
    named = make_endpoint(cast.project, name="Checkout API", failure_threshold=1)
    sibling = make_endpoint(cast.project, name="Checkout web", failure_threshold=1)
    elsewhere = make_endpoint(
        project_create(organization=cast.org, name="Other"), name="Cards", failure_threshold=1
    )
    api.as_user(cast.owner)
    made = [
        ("Everyone", "everyone@example.com", {}),
        ("Checkout team", "team@example.com", {"projects": [cast.project]}),
    ]
    made.insert(
        0 if endpoint_policy_first else 2,
        ("API owner", "owner@example.com", {"endpoints": [named]}),
    )
    ids = {
        name: _policy_over_api(api, cast, name, address, **scope) for name, address, scope in made
    }

    for endpoint in (named, sibling, elsewhere):
        go_down(endpoint)
    with django_capture_on_commit_callbacks(execute=True):
        assert escalations_run(now=timezone.now() + timedelta(seconds=5)) == 3

    followed = {
        e.incident.endpoint.name: str(e.policy_id)
        for e in Escalation.objects.select_related("incident__endpoint")
    }
    assert followed == {
        "Checkout API": ids["API owner"],
        "Checkout web": ids["Checkout team"],
        "Cards": ids["Everyone"],
    }
    paged = sorted((m.to[0], m.subject.split(": ", 1)[1]) for m in mail.outbox)
    assert paged == [
        ("everyone@example.com", "Cards (Other) is down"),
        ("owner@example.com", "Checkout API (Default) is down"),
        ("team@example.com", "Checkout web (Default) is down"),
    ]

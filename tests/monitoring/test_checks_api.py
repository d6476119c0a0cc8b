"""The checks, check-now and incidents API."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from monitoring.checks import CheckOutcome
from monitoring.models import CheckResult, EndpointStatus, Incident
from monitoring.probes import ProbeResult
from pipeline.checks import checks_record
from tests.helpers import assert_problem
from tests.monitoring.test_incidents_api import FIELDS as INCIDENT_FIELDS

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
CHECK_FIELDS = {
    "id",
    "checked_at",
    "location",
    "ok",
    "response_time_ms",
    "status_detail",
    "error",
    "error_detail",
}


def history(endpoint, *oks):
    """One check per minute from T0 with these outcomes."""
    outcomes = []
    for n, ok in enumerate(oks):
        at = T0 + timedelta(minutes=n)
        result = ProbeResult(ok, 10.0 + n, "HTTP 200" if ok else "HTTP 500", "" if ok else "boom")
        if not ok:
            result = replace(result, error_detail="Exploded: the server said boom")
        outcomes.append(CheckOutcome(endpoint.pk, at, at, result))
    checks_record(outcomes=outcomes)


@pytest.fixture
def endpoint(cast, make_endpoint):
    return make_endpoint(cast.project)


def test_checks_are_listed_newest_first_with_the_contracts_fields(api, cast, endpoint):
    history(endpoint, True, False, True)

    response = api.as_user(cast.member).get(f"/api/v1/endpoints/{endpoint.id}/checks")

    assert response.status_code == 200
    page = response.json()
    assert page["count"] == 3
    first = page["results"][0]
    assert set(first) == CHECK_FIELDS
    assert first["checked_at"] == "2030-01-01T12:02:00Z"
    assert [c["ok"] for c in page["results"]] == [True, False, True]
    assert page["results"][1]["error"] == "boom"
    assert page["results"][1]["error_detail"] == "Exploded: the server said boom"
    assert page["results"][0]["error_detail"] == ""


def test_check_times_with_any_valid_offset_are_read_in_utc(api, cast, endpoint):
    history(endpoint, True, True, True)
    url = f"/api/v1/endpoints/{endpoint.id}/checks"

    # 12:01 UTC written with offsets PostgreSQL itself would refuse (beyond ±15:59)
    late = api.as_user(cast.owner).get(url, {"from": "2030-01-02T11:59:00+23:58"})
    early = api.get(url, {"to": "2030-01-01T00:01:00-11:59:59"})

    assert late.status_code == 200
    assert [c["checked_at"][11:16] for c in late.json()["results"]] == ["12:02", "12:01"]
    assert [c["checked_at"][11:16] for c in early.json()["results"]] == ["12:00"]


def test_checks_filter_by_time_range_and_outcome(api, cast, endpoint):
    history(endpoint, True, False, True, False, True)
    url = f"/api/v1/endpoints/{endpoint.id}/checks"
    api.as_user(cast.owner)

    ranged = api.get(url, {"from": "2030-01-01T12:01:00Z", "to": "2030-01-01T12:03:00Z"})
    failed = api.get(url, {"ok": "false"})

    assert [c["checked_at"][11:16] for c in ranged.json()["results"]] == [
        "12:03",
        "12:02",
        "12:01",
    ]
    assert [c["checked_at"][11:16] for c in failed.json()["results"]] == ["12:03", "12:01"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"from": "yesterday"}, "from"),
        ({"to": "2030-13-01T00:00:00Z"}, "to"),
        ({"ok": "maybe"}, "ok"),
        ({"from": "2030-01-02T00:00:00Z", "to": "2030-01-01T00:00:00Z"}, "to"),
        ({"from": "0001-01-01T00:00:00+23:59"}, "from"),
    ],
)
def test_bad_check_filters_are_a_400_naming_the_parameter(api, cast, endpoint, query, field):
    response = api.as_user(cast.owner).get(f"/api/v1/endpoints/{endpoint.id}/checks", query)

    body = assert_problem(response, 400, "validation_error")
    assert field in body["errors"]


def test_checks_of_another_organization_or_an_ungranted_project_are_404(api, cast, make_endpoint):
    foreign = make_endpoint(cast.other_project)
    hidden_project = cast.org.projects.create(name="Hidden")
    hidden = make_endpoint(hidden_project)

    assert_problem(
        api.as_user(cast.owner).get(f"/api/v1/endpoints/{foreign.id}/checks"), 404, "not_found"
    )
    assert_problem(
        api.as_user(cast.member).get(f"/api/v1/endpoints/{hidden.id}/checks"), 404, "not_found"
    )


def test_checks_need_a_credential(api, endpoint):
    response = api.get(f"/api/v1/endpoints/{endpoint.id}/checks")

    assert_problem(response, 401, "not_authenticated")


def test_check_now_runs_a_check_within_the_request_cycle(
    api, cast, make_endpoint, http_peer, settings
):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    endpoint = make_endpoint(cast.project, target=http_peer.url("/health"))

    response = api.as_user(cast.member).post(f"/api/v1/endpoints/{endpoint.id}/check-now")

    assert response.status_code == 202
    body = response.json()
    assert body["endpoint"] == str(endpoint.id)
    check = CheckResult.objects.get(endpoint=endpoint)  # eager Celery ran it on commit
    assert check.ok is True
    assert check.scheduled_for.isoformat().replace("+00:00", "Z") == body["scheduled_for"]
    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.UP


def test_check_now_twice_in_a_row_is_throttled(api, cast, make_endpoint, http_peer, settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    endpoint = make_endpoint(cast.project, target=http_peer.url("/health"))
    other = make_endpoint(cast.project, name="other", target=http_peer.url("/health"))
    url = f"/api/v1/endpoints/{endpoint.id}/check-now"

    first = api.as_user(cast.owner).post(url)
    second = api.post(url)
    elsewhere = api.post(f"/api/v1/endpoints/{other.id}/check-now")

    assert first.status_code == 202
    assert_problem(second, 429, "throttled")
    assert second["Retry-After"] == "5"
    assert elsewhere.status_code == 202  # the limit is per endpoint
    assert CheckResult.objects.filter(endpoint=endpoint).count() == 1


def test_check_now_of_a_paused_endpoint_is_refused(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project, enabled=False)

    response = api.as_user(cast.owner).post(f"/api/v1/endpoints/{endpoint.id}/check-now")

    body = assert_problem(response, 400, "validation_error")
    assert "enabled" in body["errors"]
    assert not CheckResult.objects.exists()


def test_check_now_of_a_hidden_endpoint_is_404(api, cast, make_endpoint):
    foreign = make_endpoint(cast.other_project)

    response = api.as_user(cast.owner).post(f"/api/v1/endpoints/{foreign.id}/check-now")

    assert_problem(response, 404, "not_found")
    assert not CheckResult.objects.exists()


def test_incidents_list_with_the_contracts_fields(api, cast, endpoint):
    history(endpoint, False, False, True, False, False)

    response = api.as_user(cast.member).get("/api/v1/incidents")

    assert response.status_code == 200
    results = response.json()["results"]
    assert [set(i) for i in results] == [INCIDENT_FIELDS, INCIDENT_FIELDS]
    open_, resolved = results
    assert open_["resolved_at"] is None
    assert open_["duration_seconds"] is None
    assert open_["started_at"] == "2030-01-01T12:03:00Z"
    assert resolved["started_at"] == "2030-01-01T12:00:00Z"
    assert resolved["resolved_at"] == "2030-01-01T12:02:00Z"
    assert resolved["duration_seconds"] == 120
    assert resolved["cause"] == "boom"
    assert resolved["endpoint"] == str(endpoint.id)


def test_incidents_filter_by_state_endpoint_and_project(api, cast, make_endpoint):
    first = make_endpoint(cast.project, name="first")
    other_project = cast.org.projects.create(name="Second")
    second = make_endpoint(other_project, name="second")
    history(first, False, False, True)
    history(second, False, False)
    api.as_user(cast.owner)

    def ids(**query):
        return {i["endpoint"] for i in api.get("/api/v1/incidents", query).json()["results"]}

    assert ids(state="open") == {str(second.id)}
    assert ids(state="resolved") == {str(first.id)}
    assert ids(endpoint=str(first.id)) == {str(first.id)}
    assert ids(project=str(other_project.id)) == {str(second.id)}


def test_incident_filters_refuse_foreign_ids_and_unknown_states(api, cast, make_endpoint):
    foreign = make_endpoint(cast.other_project)
    api.as_user(cast.owner)

    for query in ({"endpoint": str(foreign.id)}, {"project": str(cast.other_project.id)}):
        assert_problem(api.get("/api/v1/incidents", query), 400, "validation_error")
    assert_problem(api.get("/api/v1/incidents", {"state": "closed"}), 400, "validation_error")


def test_a_member_sees_only_incidents_of_granted_projects(api, cast, make_endpoint):
    hidden = make_endpoint(cast.org.projects.create(name="Hidden"))
    visible = make_endpoint(cast.project, name="visible")
    history(hidden, False, False)
    history(visible, False, False)
    hidden_incident = Incident.objects.get(endpoint=hidden)

    listed = api.as_user(cast.member).get("/api/v1/incidents").json()["results"]
    detail = api.get(f"/api/v1/incidents/{hidden_incident.id}")

    assert [i["endpoint"] for i in listed] == [str(visible.id)]
    assert_problem(detail, 404, "not_found")


def test_one_incident_by_id(api, cast, endpoint):
    history(endpoint, False, False)
    incident = Incident.objects.get()

    response = api.as_user(cast.admin).get(f"/api/v1/incidents/{incident.id}")

    assert response.status_code == 200
    assert response.json()["id"] == str(incident.id)
    assert response.json()["cause"] == "boom"


def test_incidents_need_incident_read_on_a_key(api, cast, make_key, endpoint):
    history(endpoint, False, False)

    refused = api.with_key(make_key(cast.owner, "endpoint:read")).get("/api/v1/incidents")
    allowed = api.with_key(make_key(cast.owner, "incident:read")).get("/api/v1/incidents")

    assert_problem(refused, 403, "insufficient_scope")
    assert allowed.json()["count"] == 1


def test_incident_list_queries_do_not_grow_with_the_page(
    api, cast, make_endpoint, django_assert_max_num_queries
):
    for n in range(20):
        history(make_endpoint(cast.project, name=f"E{n}"), False, False)
    api.as_user(cast.owner)

    # 9: the incidents' timeline lines (activities) are one more prefetch, for the page.
    with django_assert_max_num_queries(9):
        response = api.get("/api/v1/incidents")

    assert response.json()["count"] == 20

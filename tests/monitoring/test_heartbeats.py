"""Heartbeat endpoints: creation and its refusals, the ping routes, the deadline loop and the
pings API."""

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest
import time_machine

from monitoring.models import (
    CheckResult,
    Endpoint,
    EndpointStatus,
    Incident,
    Ping,
    StatusChange,
)
from monitoring.scheduler import claim_due
from pipeline.heartbeats import heartbeat_deadlines_run
from pipeline.tasks import run_heartbeat_deadlines
from tests.helpers import assert_problem

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
PING_FIELDS = {
    "id",
    "kind",
    "exit_status",
    "received_at",
    "duration_ms",
    "rid",
    "client_ip",
    "method",
    "user_agent",
    "body_size",
    "body_truncated",
}


def create(api, cast, **fields):
    body = {"project": str(cast.project.id), "name": "Nightly backup", "type": "heartbeat"}
    body.update(fields)
    return api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")


@pytest.fixture
def heartbeat(api, cast):
    """A heartbeat made through the API at T0: 60 s period, 60 s grace."""
    with time_machine.travel(T0, tick=False):
        response = create(api, cast, interval_seconds=60, config={"grace_seconds": 60})
    assert response.status_code == 201, response.content
    return Endpoint.objects.get(pk=response.json()["id"])


def ping(client, endpoint, suffix="", at=None, method="get", **extra):
    url = f"/ping/{endpoint.ping_key}{suffix}"
    with time_machine.travel(at or T0, tick=False):
        return getattr(client, method)(url, **extra)


# --- Creation -------------------------------------------------------------------------------


def test_a_heartbeat_is_created_with_a_ping_url_and_defaults(api, cast, settings):
    settings.WEB_BASE_URL = "https://hm.example.com"

    response = create(api, cast)

    assert response.status_code == 201, response.content
    body = response.json()
    endpoint = Endpoint.objects.get(pk=body["id"])
    assert body["ping_url"] == f"https://hm.example.com/ping/{endpoint.ping_key}"
    assert body["config"] == {
        "cron": "",
        "timezone": "UTC",
        "grace_seconds": 3600,
        "min_run_seconds": None,
    }
    assert body["target"] == ""
    assert body["status"] == "pending"
    assert (body["failure_threshold"], body["recovery_threshold"]) == (1, 1)
    assert body["next_check_at"] is None


def test_probed_endpoints_have_no_ping_url(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)

    body = api.as_user(cast.owner).get(f"/api/v1/endpoints/{endpoint.id}").json()

    assert body["ping_url"] is None


def test_a_heartbeat_may_have_a_period_of_a_year(api, cast):
    response = create(api, cast, interval_seconds=365 * 86400, config={"grace_seconds": 86400})

    assert response.status_code == 201, response.content


def test_a_target_sent_for_a_heartbeat_is_a_400_naming_target_and_nothing_is_stored(api, cast):
    response = create(api, cast, target="https://example.com")

    body = assert_problem(response, 400, "validation_error")
    assert "target" in body["errors"]
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize("grace", [59, 365 * 86400 + 1, "soon"])
def test_a_grace_out_of_range_is_a_400_naming_it(api, cast, grace):
    response = create(api, cast, config={"grace_seconds": grace})

    body = assert_problem(response, 400, "validation_error")
    assert set(body["errors"]) == {"config.grace_seconds"}
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize("interval", [59, 365 * 86400 + 1])
def test_a_period_out_of_range_is_a_400(api, cast, interval):
    body = assert_problem(create(api, cast, interval_seconds=interval), 400, "validation_error")

    assert set(body["errors"]) == {"interval_seconds"}


def test_every_bad_field_of_a_heartbeat_is_named_at_once(api, cast):
    response = create(api, cast, target="x", interval_seconds=10, config={"grace_seconds": 1})

    body = assert_problem(response, 400, "validation_error")
    assert set(body["errors"]) == {"target", "interval_seconds", "config.grace_seconds"}


def test_probed_endpoints_still_need_a_target_and_at_most_a_day(api, cast):
    missing = create(api, cast, type="http")
    too_long = create(api, cast, type="http", target="https://e.com", interval_seconds=86401)

    assert assert_problem(missing, 400, "validation_error")["errors"]["target"] == [
        "This field is required."
    ]
    assert set(assert_problem(too_long, 400, "validation_error")["errors"]) == {"interval_seconds"}


def test_a_heartbeat_cannot_change_type_or_take_a_target(api, cast, heartbeat):
    url = f"/api/v1/endpoints/{heartbeat.id}"
    client = api.as_user(cast.owner)

    retyped = client.patch(url, {"type": "http", "target": "https://e.com"}, format="json")
    targeted = client.patch(url, {"target": "https://e.com"}, format="json")
    regraced = client.patch(url, {"config": {"grace_seconds": 120}}, format="json")

    assert "type" in assert_problem(retyped, 400, "validation_error")["errors"]
    assert "target" in assert_problem(targeted, 400, "validation_error")["errors"]
    assert regraced.status_code == 200, regraced.content
    assert regraced.json()["config"]["grace_seconds"] == 120


def test_a_heartbeats_thresholds_stay_1(api, cast, heartbeat):
    url = f"/api/v1/endpoints/{heartbeat.id}"

    refused = api.as_user(cast.owner).patch(url, {"failure_threshold": 3}, format="json")
    kept = api.as_user(cast.owner).patch(url, {"recovery_threshold": 1}, format="json")

    assert set(assert_problem(refused, 400, "validation_error")["errors"]) == {"failure_threshold"}
    assert kept.status_code == 200


def test_the_dispatcher_never_claims_a_heartbeat(heartbeat, make_endpoint, cast):
    Endpoint.objects.filter(pk=heartbeat.pk).update(next_check_at=T0)  # as a resume sets it

    claimed = claim_due(now=T0 + timedelta(days=1))

    assert heartbeat.pk not in {pk for pk, _ in claimed}


def test_check_now_refuses_a_heartbeat(api, cast, heartbeat):
    response = api.as_user(cast.owner).post(f"/api/v1/endpoints/{heartbeat.id}/check-now")

    assert "type" in assert_problem(response, 400, "validation_error")["errors"]


# --- The ping routes ------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "head", "post"])
def test_a_ping_by_any_method_is_ok_and_stored_as_a_check(client, heartbeat, method):
    response = ping(client, heartbeat, method=method, HTTP_USER_AGENT="curl/8")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    if method != "head":
        assert response.content == b"OK"
    stored = Ping.objects.get()
    assert (stored.kind, stored.method, stored.user_agent) == ("success", method.upper(), "curl/8")
    assert stored.client_ip == "127.0.0.1"
    check = CheckResult.objects.get()
    assert (check.ok, check.checked_at, check.response_time_ms) == (True, T0, None)
    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.UP
    assert heartbeat.late_after == T0 + timedelta(seconds=60)
    assert heartbeat.alert_after == T0 + timedelta(seconds=120)


def test_a_ping_needs_no_csrf_token(heartbeat):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)

    assert (
        ping(strict, heartbeat, method="post", data=b"x", content_type="text/plain").status_code
        == 200
    )


def test_a_body_over_100_kb_is_cut_and_marked(client, heartbeat):
    body = b"a" * 200_000

    response = ping(client, heartbeat, "/log", method="post", data=body, content_type="text/plain")

    assert response.status_code == 200
    stored = Ping.objects.get()
    assert (stored.kind, stored.body_size, stored.body_truncated) == ("log", 200_000, True)
    assert len(stored.body) == 100_000
    assert not CheckResult.objects.exists()  # a log ping changes nothing


def test_a_small_body_is_kept_whole(client, heartbeat):
    ping(client, heartbeat, method="post", data=b"3 files backed up", content_type="text/plain")

    stored = Ping.objects.get()
    assert (stored.body, stored.body_size, stored.body_truncated) == (
        "3 files backed up",
        17,
        False,
    )


@pytest.mark.parametrize("key", [lambda: str(uuid4()), lambda: "not-a-uuid"])
@pytest.mark.parametrize("method", ["get", "post"])
def test_an_unknown_key_is_404_and_nothing_is_written(client, heartbeat, key, method):
    response = getattr(client, method)(f"/ping/{key()}")

    assert response.status_code == 404
    assert response.content == b"not found"
    assert not Ping.objects.exists()
    assert not CheckResult.objects.exists()


def test_a_deleted_heartbeats_key_is_404(client, heartbeat):
    heartbeat.delete()

    assert ping(client, heartbeat).status_code == 404


@pytest.mark.parametrize("suffix", ["/256", "/-1", "/stop"])
def test_an_unknown_suffix_is_404(client, heartbeat, suffix):
    assert ping(client, heartbeat, suffix).status_code == 404
    assert not Ping.objects.exists()


def test_a_start_then_a_success_with_the_same_rid_gives_the_run_duration(client, heartbeat):
    rid, other = uuid4(), uuid4()
    ping(client, heartbeat, f"/start?rid={rid}", at=T0)
    ping(client, heartbeat, f"/start?rid={other}", at=T0 + timedelta(seconds=20))

    ping(client, heartbeat, f"?rid={rid}", at=T0 + timedelta(seconds=42.5))

    end = Ping.objects.filter(kind="success").get()
    assert (end.rid, end.duration_ms) == (rid, 42_500.0)
    assert CheckResult.objects.get().response_time_ms == 42_500.0


def test_without_a_rid_the_latest_start_since_the_last_end_is_paired(client, heartbeat):
    ping(client, heartbeat, "/start", at=T0)
    ping(client, heartbeat, at=T0 + timedelta(seconds=5))
    ping(client, heartbeat, at=T0 + timedelta(seconds=30))

    durations = list(
        Ping.objects.filter(kind="success")
        .order_by("received_at")
        .values_list("duration_ms", flat=True)
    )
    assert durations == [5000.0, None]


def test_a_start_alone_changes_no_status(client, heartbeat):
    ping(client, heartbeat, "/start")

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.PENDING
    assert not CheckResult.objects.exists()


def test_a_run_shorter_than_min_run_seconds_is_a_failure(client, cast, make_endpoint):
    endpoint = make_endpoint(
        cast.project,
        type="heartbeat",
        target="",
        config={"min_run_seconds": 60},
        failure_threshold=1,
    )
    ping(client, endpoint, "/start", at=T0)

    ping(client, endpoint, at=T0 + timedelta(seconds=2))

    assert Incident.objects.get().cause == "finished too fast"


def test_the_client_ip_honours_num_proxies(client, heartbeat, settings):
    settings.NUM_PROXIES = 1
    ping(client, heartbeat, HTTP_X_FORWARDED_FOR="198.51.100.7, 10.0.0.2")
    settings.NUM_PROXIES = 0
    ping(client, heartbeat, at=T0 + timedelta(seconds=1), HTTP_X_FORWARDED_FOR="198.51.100.7")

    ips = list(Ping.objects.order_by("received_at").values_list("client_ip", flat=True))
    assert ips == ["10.0.0.2", "127.0.0.1"]


# --- Failures and the deadline loop ---------------------------------------------------------


@pytest.mark.parametrize(("suffix", "cause"), [("/fail", "failure ping"), ("/3", "exit status 3")])
def test_a_failure_ping_opens_an_incident_at_once(client, heartbeat, suffix, cause):
    ping(client, heartbeat, at=T0)

    ping(client, heartbeat, suffix, at=T0 + timedelta(seconds=10))

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.DOWN
    incident = Incident.objects.get()
    assert (incident.cause, incident.started_at) == (cause, T0 + timedelta(seconds=10))


def test_exit_status_zero_is_a_success(client, heartbeat):
    ping(client, heartbeat, "/0")

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.UP
    assert Ping.objects.get().exit_status == 0


def test_no_ping_goes_late_after_the_period_then_down_with_one_incident_after_the_grace(
    client, heartbeat
):
    ping(client, heartbeat, at=T0)

    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=59)) == (0, 0)
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=60)) == (1, 0)
    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.LATE
    assert not Incident.objects.exists()

    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=119)) == (0, 0)
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=120)) == (0, 1)
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=200)) == (0, 0)

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.DOWN
    incident = Incident.objects.get()
    assert incident.cause == "no ping since 2030-01-01 12:00:00 UTC"
    assert incident.started_at == T0 + timedelta(seconds=120)
    moves = StatusChange.objects.order_by("changed_at").values_list("from_status", "to_status")
    assert list(moves) == [("pending", "up"), ("up", "late"), ("late", "down")]
    missed = CheckResult.objects.get(ok=False)
    assert missed.checked_at == T0 + timedelta(seconds=120)


def test_a_start_with_no_end_past_the_grace_is_down_started_never_finished(client, heartbeat):
    ping(client, heartbeat, at=T0)
    ping(client, heartbeat, "/start", at=T0 + timedelta(seconds=30))

    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=60)) == (0, 0)
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=89)) == (0, 0)
    # The run had the grace (60 s) to end: late and down at once when it has not.
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=90)) == (1, 1)
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=300)) == (0, 0)

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.DOWN
    cause = "started at 2030-01-01 12:00:30 UTC, never finished"
    incident = Incident.objects.get()
    assert (incident.cause, incident.started_at) == (cause, T0 + timedelta(seconds=90))
    assert StatusChange.objects.get(to_status="late").reason == cause


def test_a_long_period_run_is_down_a_grace_after_its_start_not_a_period(api, cast, client):
    with time_machine.travel(T0, tick=False):
        response = create(api, cast, interval_seconds=86_400, config={"grace_seconds": 600})
    daily = Endpoint.objects.get(pk=response.json()["id"])
    ping(client, daily, at=T0)
    ping(client, daily, "/start", at=T0 + timedelta(hours=23))

    assert heartbeat_deadlines_run(now=T0 + timedelta(hours=23, minutes=9)) == (0, 0)
    assert heartbeat_deadlines_run(now=T0 + timedelta(hours=23, minutes=10)) == (1, 1)

    assert Incident.objects.get().cause == "started at 2030-01-02 11:00:00 UTC, never finished"


def test_a_start_then_its_end_is_no_open_run(client, heartbeat):
    ping(client, heartbeat, "/start", at=T0)
    ping(client, heartbeat, at=T0 + timedelta(seconds=10))

    heartbeat_deadlines_run(now=T0 + timedelta(seconds=70))
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=130))

    assert Incident.objects.get().cause == "no ping since 2030-01-01 12:00:10 UTC"


def test_a_run_that_finishes_inside_the_grace_resolves_nothing_and_opens_nothing(client, heartbeat):
    ping(client, heartbeat, at=T0)
    ping(client, heartbeat, "/start", at=T0 + timedelta(seconds=30))
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=70))

    ping(client, heartbeat, at=T0 + timedelta(seconds=85))
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=89))

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.UP
    assert heartbeat.late_after == T0 + timedelta(seconds=145)
    assert not Incident.objects.exists()


def test_a_log_ping_moves_no_deadline(client, heartbeat):
    ping(client, heartbeat, at=T0)

    ping(client, heartbeat, "/log", at=T0 + timedelta(seconds=30))

    heartbeat.refresh_from_db()
    assert heartbeat.late_after == T0 + timedelta(seconds=60)


def test_the_beat_task_turns_an_unfinished_run_down_by_the_clock(client, heartbeat):
    ping(client, heartbeat, at=T0)
    ping(client, heartbeat, "/start", at=T0 + timedelta(seconds=5))

    for seconds in (66, 126):
        with time_machine.travel(T0 + timedelta(seconds=seconds), tick=False):
            run_heartbeat_deadlines()

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.DOWN
    assert Incident.objects.get().cause == "started at 2030-01-01 12:00:05 UTC, never finished"


def test_the_beat_task_flips_by_the_clock(client, heartbeat):
    ping(client, heartbeat, at=T0)

    with time_machine.travel(T0 + timedelta(seconds=61), tick=False):
        run_heartbeat_deadlines()
    with time_machine.travel(T0 + timedelta(seconds=121), tick=False):
        run_heartbeat_deadlines()

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.DOWN
    assert Incident.objects.count() == 1


def test_a_success_ping_resolves_the_incident(client, heartbeat):
    ping(client, heartbeat, at=T0)
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=60))
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=120))

    ping(client, heartbeat, at=T0 + timedelta(seconds=150))

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.UP
    incident = Incident.objects.get()
    assert incident.resolved_at == T0 + timedelta(seconds=150)
    assert heartbeat.late_after == T0 + timedelta(seconds=210)


def test_a_late_heartbeat_pinged_in_its_grace_is_up_again_with_no_incident(client, heartbeat):
    ping(client, heartbeat, at=T0)
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=60))

    ping(client, heartbeat, at=T0 + timedelta(seconds=90))
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=125))

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.UP
    assert not Incident.objects.exists()


def test_pending_and_paused_heartbeats_never_go_late(api, cast, client, heartbeat):
    heartbeat_deadlines_run(now=T0 + timedelta(days=1))
    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.PENDING

    ping(client, heartbeat, at=T0)
    api.as_user(cast.owner).post(f"/api/v1/endpoints/{heartbeat.id}/pause")
    heartbeat_deadlines_run(now=T0 + timedelta(days=1))

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.PAUSED
    assert not Incident.objects.exists()


def test_a_ping_to_a_paused_heartbeat_is_stored_but_moves_nothing(api, cast, client, heartbeat):
    api.as_user(cast.owner).post(f"/api/v1/endpoints/{heartbeat.id}/pause")

    assert ping(client, heartbeat, "/fail").status_code == 200

    assert Ping.objects.count() == 1
    assert not CheckResult.objects.exists()
    assert not Incident.objects.exists()


@pytest.mark.parametrize("how", ["action", "patch"])
def test_a_paused_heartbeat_keeps_no_deadline_and_is_pending_when_resumed(
    api, cast, client, heartbeat, how
):
    def toggle(enabled, at):
        with time_machine.travel(at, tick=False):
            url = f"/api/v1/endpoints/{heartbeat.id}"
            if how == "action":
                response = api.as_user(cast.owner).post(f"{url}/{'resume' if enabled else 'pause'}")
            else:
                response = api.as_user(cast.owner).patch(url, {"enabled": enabled}, format="json")
        assert response.status_code == 200, response.content
        heartbeat.refresh_from_db()

    ping(client, heartbeat, at=T0)
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=90))  # late, inside its grace
    toggle(False, T0 + timedelta(seconds=100))
    assert (heartbeat.status, heartbeat.late_after, heartbeat.alert_after) == ("paused", None, None)

    resumed = T0 + timedelta(hours=1)
    toggle(True, resumed)
    assert (heartbeat.status, heartbeat.late_after, heartbeat.alert_after) == (
        "pending",
        None,
        None,
    )
    heartbeat_deadlines_run(now=resumed + timedelta(days=1))
    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.PENDING
    assert not Incident.objects.exists()

    ping(client, heartbeat, at=resumed + timedelta(minutes=5))
    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.UP
    assert heartbeat.late_after == resumed + timedelta(minutes=6)


# --- The pings API --------------------------------------------------------------------------


def test_pings_are_listed_newest_first_with_the_contracts_fields(api, cast, client, heartbeat):
    rid = uuid4()
    ping(client, heartbeat, f"/start?rid={rid}", at=T0)
    ping(client, heartbeat, f"/3?rid={rid}", at=T0 + timedelta(seconds=3))

    response = api.as_user(cast.member).get(f"/api/v1/endpoints/{heartbeat.id}/pings")

    assert response.status_code == 200
    page = response.json()
    assert page["count"] == 2
    first = page["results"][0]
    assert set(first) == PING_FIELDS
    assert (first["kind"], first["exit_status"], first["duration_ms"]) == ("fail", 3, 3000.0)
    assert first["rid"] == str(rid)
    assert first["received_at"] == "2030-01-01T12:00:03Z"
    assert page["results"][1]["kind"] == "start"


def test_pings_need_a_caller(api, heartbeat):
    response = api.as_user(None).get(f"/api/v1/endpoints/{heartbeat.id}/pings")

    assert_problem(response, 401, "not_authenticated")


def test_pings_need_endpoint_read_on_a_key(api, cast, make_key, heartbeat):
    refused = api.with_key(make_key(cast.owner, "incident:read")).get(
        f"/api/v1/endpoints/{heartbeat.id}/pings"
    )
    allowed = api.with_key(make_key(cast.owner, "endpoint:read")).get(
        f"/api/v1/endpoints/{heartbeat.id}/pings"
    )

    assert_problem(refused, 403, "insufficient_scope")
    assert allowed.status_code == 200


def test_pings_of_another_organization_are_404(api, cast, heartbeat):
    response = api.as_user(cast.outsider).get(f"/api/v1/endpoints/{heartbeat.id}/pings")

    assert_problem(response, 404, "not_found")


# --- Pages ----------------------------------------------------------------------------------


def test_the_endpoint_page_and_overview_show_the_ping_url_and_a_late_badge(client, cast, heartbeat):
    ping(client, heartbeat, at=T0)
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=60))
    with time_machine.travel(T0 + timedelta(seconds=61), tick=False):
        client.force_login(cast.owner)
        page = client.get(f"/endpoints/{heartbeat.pk}").content.decode()
        overview = client.get("/").content.decode()

    heartbeat.refresh_from_db()
    assert heartbeat.ping_url in page
    assert 'class="badge status-late"' in overview


# --- Cron schedules ---------------------------------------------------------------------------


def test_a_bad_cron_and_an_unknown_zone_are_named_in_one_400_and_nothing_is_stored(api, cast):
    response = create(api, cast, config={"cron": "61 * * * *", "timezone": "Mars/Olympus"})

    body = assert_problem(response, 400, "validation_error")
    assert "minute 61 is out of range" in body["errors"]["config.cron"][0]
    assert "Unknown time zone" in body["errors"]["config.timezone"][0]
    assert not Endpoint.objects.exists()


def test_a_cron_heartbeat_is_late_at_its_next_cron_time_in_its_zone(api, cast, client):
    # 12:00 UTC is 07:00 in New York (EST); the job runs at 07:30 local, 12:30 UTC.
    with time_machine.travel(T0, tick=False):
        response = create(
            api,
            cast,
            config={"cron": "30 7 * * *", "timezone": "America/New_York", "grace_seconds": 60},
        )
    assert response.status_code == 201, response.content
    heartbeat = Endpoint.objects.get(pk=response.json()["id"])
    ping(client, heartbeat, at=T0)

    assert heartbeat_deadlines_run(now=T0 + timedelta(minutes=29, seconds=59)) == (0, 0)
    assert heartbeat_deadlines_run(now=T0 + timedelta(minutes=30)) == (1, 0)
    assert heartbeat_deadlines_run(now=T0 + timedelta(minutes=31)) == (0, 1)
    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.DOWN

"""Maintenance windows by RFC 5545 rule and time zone: "first Sunday of the month 02:00-04:00
Europe/Berlin" holds in local hours across both DST changes, mutes notifications exactly
then, and is left out of SLA and uptime exactly then; the API's checks; weekly windows as
they were."""

import importlib
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
import time_machine
from django.apps import apps

from alerts import services
from alerts.models import Delivery, DeliveryStatus, MaintenanceWindow
from monitoring.models import Endpoint
from tests.alerts.receiver import webhook

pytestmark = pytest.mark.django_db
URL = "/api/v1/maintenance-windows"
# The first Sunday of January 2030, 02:00-04:00 in Berlin (winter: UTC+1).
FIRST = datetime(2030, 1, 6, 1, 0, tzinfo=UTC)
MONTHLY = {"rrule": "FREQ=MONTHLY;BYDAY=1SU", "timezone": "Europe/Berlin"}


def berlin_window(org, **scope: Any) -> MaintenanceWindow:
    return services.maintenance_window_save(
        window=MaintenanceWindow(organization=org),
        name="Patch Sunday",
        starts_at=FIRST,
        ends_at=FIRST + timedelta(hours=2),
        **MONTHLY,
        **scope,
    )


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_the_window_keeps_its_local_hours_across_both_dst_changes(cast):
    window = berlin_window(cast.org)

    found = window.occurrences(utc(2030, 1, 1), utc(2031, 1, 1))

    # Winter (UTC+1): 01:00-03:00 UTC. Summer (UTC+2, from March 31 to October 27): 00:00-02:00.
    assert [(s.month, s.day, s.hour, e.hour) for s, e in found] == [
        (1, 6, 1, 3),
        (2, 3, 1, 3),
        (3, 3, 1, 3),
        (4, 7, 0, 2),
        (5, 5, 0, 2),
        (6, 2, 0, 2),
        (7, 7, 0, 2),
        (8, 4, 0, 2),
        (9, 1, 0, 2),
        (10, 6, 0, 2),
        (11, 3, 1, 3),
        (12, 1, 1, 3),
    ]
    assert window.next_start(utc(2030, 3, 3, 3)) == utc(2030, 4, 7, 0)
    assert window.active_at(utc(2030, 4, 7, 1, 59))
    assert not window.active_at(utc(2030, 4, 7, 2, 0))
    assert window.active_at(utc(2030, 11, 3, 2, 59))
    assert not window.active_at(utc(2030, 11, 3, 0, 59))


# --- Notifications ----------------------------------------------------------------------------


@pytest.mark.usefixtures("loopback_allowed")
@pytest.mark.parametrize(
    ("inside", "outside"),
    [
        (utc(2030, 4, 7, 1, 59), utc(2030, 4, 7, 2, 1)),  # summer: 04:01 Berlin is out
        (utc(2030, 11, 3, 2, 30), utc(2030, 11, 3, 0, 30)),  # winter: 01:30 Berlin is out
    ],
)
def test_incidents_inside_the_local_hours_are_held_and_outside_sent(
    cast, make_endpoint, receiver, go_down, inside, outside
):
    held = make_endpoint(cast.project, name="Held", failure_threshold=1)
    told = make_endpoint(cast.project, name="Told", failure_threshold=1)
    webhook(cast, receiver.url)
    berlin_window(cast.org)

    with time_machine.travel(inside, tick=False):
        go_down(held, at=inside)
    with time_machine.travel(outside, tick=False):
        go_down(told, at=outside)

    statuses = dict(Delivery.objects.values_list("incident__endpoint__name", "status"))
    assert statuses == {"Held": DeliveryStatus.SUPPRESSED, "Told": DeliveryStatus.DELIVERED}
    [sent] = [json.loads(request.body) for request in receiver.requests]
    assert sent["endpoint"]["name"] == "Told"


# --- SLA and uptime ---------------------------------------------------------------------------


def figures(api, user, endpoint, start, end, name="sla", **query):
    query = {"from": start.isoformat(), "to": end.isoformat(), "endpoint": str(endpoint.pk)}
    if name == "sla":
        query["target"] = "99.9"
    response = api.as_user(user).get(f"/api/v1/analytics/{name}?{urlencode(query)}")
    assert response.status_code == 200, response.content
    (row,) = response.json()["results"]
    return row


@pytest.mark.parametrize(
    ("day", "down_from", "down_to"),
    [
        # Summer: the window is 00:00-02:00 UTC; down 23:30-02:30 UTC leaves one hour counted.
        (utc(2030, 4, 7), utc(2030, 4, 6, 23, 30), utc(2030, 4, 7, 2, 30)),
        # Winter: the window is 01:00-03:00 UTC; down 00:30-03:30 UTC leaves one hour counted.
        (utc(2030, 11, 3), utc(2030, 11, 3, 0, 30), utc(2030, 11, 3, 3, 30)),
    ],
)
def test_the_sla_and_uptime_leave_out_exactly_the_local_hours(
    api, cast, make_endpoint, record, day, down_from, down_to
):
    endpoint = make_endpoint(cast.project, name="Shop", failure_threshold=1)
    start, end = day - timedelta(hours=6), day + timedelta(hours=6)
    Endpoint.objects.filter(pk=endpoint.pk).update(created_at=start, watch_started_at=start)
    endpoint.refresh_from_db()
    berlin_window(cast.org, projects=[cast.project])

    with time_machine.travel(end, tick=False):
        record(endpoint, [(start, True, 20.0), (down_from, False, 20.0), (down_to, True, 20.0)])
        sla = figures(api, cast.owner, endpoint, start, end)
        uptime = figures(api, cast.owner, endpoint, start, end, name="uptime")

    assert sla["downtime_s"] == 3600.0
    # Watched 12 hours, 2 of them in maintenance: 1 hour down of the 10 counted.
    assert uptime["uptime_24h"] == pytest.approx(90.0, abs=1e-3)


# --- API --------------------------------------------------------------------------------------


def body(**fields: Any) -> dict[str, Any]:
    return {
        "name": "Patch Sunday",
        "starts_at": "2030-01-06T02:00:00+01:00",
        "ends_at": "2030-01-06T04:00:00+01:00",
        **MONTHLY,
        **fields,
    }


def test_a_rule_window_is_created_and_answered(api, cast):
    with time_machine.travel(utc(2030, 3, 10), tick=False):
        response = api.as_user(cast.owner).post(URL, body(rrule="rrule:freq=monthly;byday=1su"))

    assert response.status_code == 201, response.content
    data = response.json()
    assert (data["rrule"], data["timezone"], data["recurrence"]) == (
        "FREQ=MONTHLY;BYDAY=1SU",
        "Europe/Berlin",
        None,
    )
    assert data["next_start"] == "2030-04-07T00:00:00Z"


def test_the_old_weekly_input_becomes_the_weekly_rule(api, cast):
    response = api.as_user(cast.owner).post(
        URL, body(recurrence="weekly", rrule="", timezone="UTC")
    )

    assert response.status_code == 201, response.content
    assert (response.json()["rrule"], response.json()["recurrence"]) == ("FREQ=WEEKLY", "weekly")
    window = MaintenanceWindow.objects.get()
    patched = api.as_user(cast.owner).patch(f"{URL}/{window.pk}", {"recurrence": None}).json()
    assert (patched["rrule"], patched["recurrence"]) == ("", None)


def test_a_patch_of_the_name_keeps_the_rule(api, cast):
    window = berlin_window(cast.org)

    data = api.as_user(cast.owner).patch(f"{URL}/{window.pk}", {"name": "Renamed"}).json()

    assert (data["rrule"], data["timezone"]) == ("FREQ=MONTHLY;BYDAY=1SU", "Europe/Berlin")


@pytest.mark.parametrize(
    ("rrule", "words"),
    [
        ("FREQ=SOMETIMES", "Not a valid"),
        ("BYDAY=MO", "Not a valid"),
        ("DTSTART:20300101T000000\nRRULE:FREQ=DAILY", "DTSTART"),
        ("FREQ=DAILY;DTSTART=20300101T000000", "DTSTART"),
        ("FREQ=MINUTELY", "HOURLY or coarser"),
        ("FREQ=SECONDLY", "HOURLY or coarser"),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", "no month of the rule has"),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", "never occurs"),
        # Rules dateutil takes and then loops on for ever, raises on, or walks to the
        # year 9999 for: refused by their parts, at once (never a 500 or a hung worker).
        ("FREQ=DAILY;INTERVAL=0", "INTERVAL must be"),
        ("FREQ=YEARLY;INTERVAL=-1", "INTERVAL must be"),
        ("FREQ=HOURLY;BYHOUR=25", "BYHOUR takes"),
        ("FREQ=MONTHLY;BYDAY=+60SU", "BYDAY takes"),
        ("FREQ=MONTHLY;BYMONTHDAY=0", "BYMONTHDAY takes"),
        ("FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30", "no month of the rule has"),
        ("FREQ=DAILY;BYMONTH=4,6;BYMONTHDAY=31", "no month of the rule has"),
        ("FREQ=HOURLY;BYWEEKNO=53;BYDAY=MO;BYMONTH=6", "BYWEEKNO is for YEARLY"),
        ("FREQ=DAILY;BYSETPOS=3", "BYSETPOS is for"),
        ("FREQ=WEEKLY;FOO=1", "unknown part"),
        ("FREQ=DAILY;UNTIL=20290101T000000Z", "never occurs"),
        ("FREQ=HOURLY", "lasts less than"),
    ],
)
def test_a_bad_rule_is_a_400_naming_rrule(api, cast, rrule, words):
    started = time.monotonic()
    response = api.as_user(cast.owner).post(URL, body(rrule=rrule))

    assert time.monotonic() - started < 5  # no rule walks dateutil to the year 9999

    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert set(errors) == ({"ends_at"} if words == "lasts less than" else {"rrule"})
    assert words in " ".join(next(iter(errors.values())))
    assert not MaintenanceWindow.objects.exists()


def test_every_bad_field_is_named_at_once(api, cast):
    response = api.as_user(cast.owner).post(
        URL, body(name="x" * 201, rrule="FREQ=MINUTELY", timezone="Mars/Olympus")
    )

    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"name", "rrule", "timezone"}


def test_an_unknown_time_zone_is_a_400_naming_timezone(api, cast):
    window = berlin_window(cast.org)

    response = api.as_user(cast.owner).patch(f"{URL}/{window.pk}", {"timezone": "Europe/Nowhere"})

    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"timezone"}
    window.refresh_from_db()
    assert window.timezone == "Europe/Berlin"


def test_a_member_cannot_plan_a_rule_window(api, cast):
    assert api.as_user(cast.member).post(URL, body()).status_code == 403


def test_the_page_form_plans_a_rule_window_in_its_zone(client, cast):
    client.force_login(cast.owner)

    response = client.post(
        "/alerts/maintenance/new",
        {"starts_at": "2030-01-06T02:00", "ends_at": "2030-01-06T04:00", **MONTHLY},
    )

    assert response.status_code == 302, response.content
    window = MaintenanceWindow.objects.get()
    assert (window.starts_at, window.rrule, window.timezone) == (
        FIRST,
        "FREQ=MONTHLY;BYDAY=1SU",
        "Europe/Berlin",
    )
    assert "FREQ=MONTHLY;BYDAY=1SU" in client.get("/alerts").content.decode()


def test_the_page_form_names_a_bad_rule_and_zone(client, cast):
    client.force_login(cast.owner)

    response = client.post(
        "/alerts/maintenance/new",
        {
            "starts_at": "2030-01-06T02:00",
            "ends_at": "2030-01-06T04:00",
            "rrule": "FREQ=MINUTELY",
            "timezone": "Nowhere",
        },
    )

    assert response.status_code == 400
    text = response.content.decode()
    assert "HOURLY or coarser" in text
    assert "Unknown time zone" in text


# --- Weekly windows after the migration -------------------------------------------------------


def test_a_weekly_window_is_unchanged_by_the_migration(cast):
    window = services.maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        starts_at=utc(2030, 3, 24, 23, 30),
        ends_at=utc(2030, 3, 25, 1, 30),
        recurrence="weekly",
    )
    # A row as it stood before the migration: the old column only.
    MaintenanceWindow.objects.filter(pk=window.pk).update(rrule="", timezone="UTC")
    migration = importlib.import_module("alerts.migrations.0004_incident_response")

    migration._weekly_to_rrule(apps, None)

    window.refresh_from_db()
    assert (window.rrule, window.timezone) == ("FREQ=WEEKLY", "UTC")
    found = window.occurrences(utc(2030, 3, 20), utc(2030, 4, 20))
    # Every seven days in UTC, whatever a zone's DST (Europe changes on March 31).
    assert found == [
        (
            utc(2030, 3, 24, 23, 30) + n * timedelta(days=7),
            utc(2030, 3, 25, 1, 30) + n * timedelta(days=7),
        )
        for n in range(4)
    ]

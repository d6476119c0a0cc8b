"""A heartbeat's pages: the ping log and copy-ready snippets on its endpoint page, and the
next expected times of its schedule in the form (drawn by the server, and asked for as the
user types through /endpoints/schedule-preview)."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from monitoring.models import Endpoint, Ping
from tests.helpers import assert_problem
from tests.web.conftest import Markup, html, visible_text

T0 = datetime(2030, 1, 7, 12, 0, tzinfo=UTC)  # a Monday, New York on standard time
PREVIEW = "/endpoints/schedule-preview"


def create(api, cast, **fields):
    body = {"project": str(cast.project.id), "name": "Nightly backup", "type": "heartbeat"}
    body.update(fields)
    response = api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")
    assert response.status_code == 201, response.content
    return Endpoint.objects.select_related("project").get(pk=response.json()["id"])


@pytest.fixture
def heartbeat(api, cast):
    return create(api, cast, interval_seconds=3600)


def ping(endpoint, **fields):
    fields.setdefault("kind", "success")
    fields.setdefault("received_at", timezone.now())
    fields.setdefault("method", "POST")
    return Ping.objects.create(endpoint=endpoint, **fields)


def page(pages, user, endpoint):
    response = pages.as_user(user).get(f"/endpoints/{endpoint.pk}")
    assert response.status_code == 200
    return response


def rows(markup, table_id):
    """The visible text of each body row of a table."""
    body = markup.split(f'id="{table_id}"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [visible_text("<tr" + row) for row in body.split("<tr")[1:]]


# --- The endpoint page ------------------------------------------------------------------------


def test_the_ping_log_lists_the_latest_pings_with_their_details(pages, cast, heartbeat):
    at = timezone.now().replace(microsecond=0)
    ping(heartbeat, kind="start", received_at=at - timedelta(minutes=5), client_ip="192.0.2.7")
    ping(
        heartbeat,
        kind="fail",
        exit_status=3,
        duration_ms=4200.0,
        received_at=at,
        client_ip="2001:db8::1",
        method="GET",
        body="disk full",
        body_size=9,
    )

    found = rows(html(page(pages, cast.member, heartbeat)), "ping-log")

    assert len(found) == 2
    newest, oldest = found
    assert newest.startswith(f"{at:%Y-%m-%d %H:%M:%S} failure exit 3 4.20 s 2001:db8::1 GET")
    assert newest.endswith("disk full")
    assert oldest.startswith(f"{at - timedelta(minutes=5):%Y-%m-%d %H:%M:%S} start")
    assert "192.0.2.7 POST" in oldest


def test_a_body_preview_is_escaped_and_cut_at_120_characters(pages, cast, heartbeat):
    body = "<script>alert(1)</script>" + "x" * 200
    ping(heartbeat, body=body, body_size=len(body))

    markup = html(page(pages, cast.member, heartbeat))

    assert "<script>alert(1)" not in markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markup
    (row,) = rows(markup, "ping-log")
    assert row.endswith(body[:120] + "…")
    assert body[:121] not in row
    assert "truncated" not in row


def test_a_body_cut_at_100_kb_is_marked_truncated(pages, cast, heartbeat):
    ping(heartbeat, body="a" * 100_000, body_size=100_000, body_truncated=True)
    ping(heartbeat, body="short", body_size=5, received_at=timezone.now() - timedelta(hours=1))

    cut, whole = rows(html(page(pages, cast.member, heartbeat)), "ping-log")

    assert cut.endswith("… truncated")
    assert "truncated" not in whole


def test_the_ping_log_shows_the_latest_50(pages, cast, heartbeat):
    start = timezone.now() - timedelta(hours=2)
    for n in range(55):
        ping(heartbeat, received_at=start + timedelta(minutes=n), body=f"run {n}", body_size=5)

    found = rows(html(page(pages, cast.member, heartbeat)), "ping-log")

    assert len(found) == 50
    assert found[0].endswith("run 54")
    assert found[-1].endswith("run 5")


def test_the_ping_log_costs_one_query_however_many_pings(pages, cast, heartbeat):
    pages.as_user(cast.member)
    ping(heartbeat, body="one", body_size=3)
    with CaptureQueriesContext(connection) as one:
        page(pages, cast.member, heartbeat)
    for n in range(60):
        ping(heartbeat, received_at=timezone.now() - timedelta(minutes=n), body="b" * 5000)
    with CaptureQueriesContext(connection) as many:
        page(pages, cast.member, heartbeat)

    assert len(many) == len(one)
    (log,) = [q["sql"] for q in many if '"monitoring_ping"' in q["sql"]]
    assert log.rstrip().endswith("LIMIT 50")
    assert 'SUBSTRING("monitoring_ping"."body", 1, 121)' in log or "SUBSTR(" in log


def test_without_pings_the_page_says_how_to_send_the_first(pages, cast, heartbeat):
    text = visible_text(page(pages, cast.member, heartbeat))

    assert "No pings yet" in text
    assert f"curl -fsS -m 10 --retry 5 -o /dev/null {heartbeat.ping_url}" in text


def test_the_snippets_hold_the_real_ping_url(pages, cast, heartbeat):
    url = heartbeat.ping_url
    assert url.endswith(f"/ping/{heartbeat.ping_key}")

    markup = Markup(html(page(pages, cast.member, heartbeat)))
    text = " ".join(" ".join(markup.text).split())

    assert f"curl -fsS -m 10 --retry 5 -o /dev/null {url}" in text
    assert (
        f"0 * * * * curl -fsS -m 10 --retry 5 -o /dev/null {url}/start ; /path/to/job.sh ; "
        f"curl -fsS -m 10 --retry 5 -o /dev/null {url}/$?"
    ) in text
    assert f"Invoke-RestMethod {url}" in text
    # Each has a copy button naming its text, drawn hidden until the script can copy.
    for name in ("ping-url", "snippet-curl", "snippet-crontab", "snippet-powershell"):
        (button,) = markup.find("button", data_copy=name)
        assert "hidden" in button
        assert markup.find("pre", id=name)


def test_a_cron_heartbeat_crontab_line_uses_its_cron(pages, cast, api):
    config = {"cron": "30 2 * * *", "timezone": "Europe/Berlin"}
    heartbeat = create(api, cast, config=config)

    text = visible_text(page(pages, cast.member, heartbeat))

    assert f"30 2 * * * curl -fsS -m 10 --retry 5 -o /dev/null {heartbeat.ping_url}/start" in text
    assert "Europe/Berlin time" in text


def test_the_slug_url_shows_when_the_heartbeat_has_a_slug(pages, cast, api, heartbeat):
    with_slug = create(api, cast, name="Reports", slug="reports")
    cast.project.refresh_from_db()

    shown = visible_text(page(pages, cast.member, with_slug))
    plain = Markup(html(page(pages, cast.member, heartbeat)))

    assert f"/ping/{cast.project.ping_key}/reports" in shown
    assert not plain.find("pre", id="slug-url")


def test_the_page_shows_the_next_expected_times(pages, cast, api):
    with time_machine.travel(T0, tick=False):
        heartbeat = create(api, cast, config={"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"})
        markup = Markup(html(page(pages, cast.member, heartbeat)))

    times = [tag["datetime"] for tag in markup.find("time")]
    assert times == [
        "2030-01-08T09:00:00+01:00",
        "2030-01-09T09:00:00+01:00",
        "2030-01-10T09:00:00+01:00",
        "2030-01-11T09:00:00+01:00",
        "2030-01-14T09:00:00+01:00",
    ]


def test_a_period_counts_from_the_last_ping_not_from_now(pages, cast, heartbeat, client):
    with time_machine.travel(T0, tick=False):
        assert client.get(f"/ping/{heartbeat.ping_key}").status_code == 200
    with time_machine.travel(T0 + timedelta(minutes=10), tick=False):
        markup = Markup(html(page(pages, cast.member, heartbeat)))

    assert [tag["datetime"] for tag in markup.find("time")] == [
        f"2030-01-07T{hour}:00:00+00:00" for hour in (13, 14, 15, 16, 17)
    ]


def test_a_probed_endpoint_has_no_ping_panel(pages, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)

    markup = html(page(pages, cast.member, endpoint))

    assert 'id="ping-urls"' not in markup
    assert 'id="ping-log"' not in markup


# --- The form ---------------------------------------------------------------------------------


def test_the_edit_form_draws_the_saved_schedules_next_five_times(pages, cast, api):
    with time_machine.travel(T0, tick=False):
        heartbeat = create(
            api, cast, config={"cron": "*/5 * * * *", "timezone": "America/New_York"}
        )
        response = pages.as_user(cast.member).get(f"/endpoints/{heartbeat.pk}/edit")

    markup = Markup(html(response))
    (panel,) = markup.find("div", id="schedule-preview")
    assert "hidden" not in panel
    assert [tag["datetime"] for tag in markup.find("time")] == [
        "2030-01-07T07:05:00-05:00",
        "2030-01-07T07:10:00-05:00",
        "2030-01-07T07:15:00-05:00",
        "2030-01-07T07:20:00-05:00",
        "2030-01-07T07:25:00-05:00",
    ]
    text = visible_text(response)
    assert "{#" not in text
    assert "2030-01-07 07:05 EST" in text
    assert "cron `*/5 * * * *` (America/New_York)" in text


def test_a_period_heartbeats_form_counts_its_period_from_now(pages, cast, heartbeat):
    with time_machine.travel(T0, tick=False):
        markup = Markup(html(pages.as_user(cast.member).get(f"/endpoints/{heartbeat.pk}/edit")))

    assert [tag["datetime"] for tag in markup.find("time")] == [
        f"2030-01-07T{hour}:00:00+00:00" for hour in (13, 14, 15, 16, 17)
    ]


def test_the_new_form_hides_the_preview_until_heartbeat_is_chosen(pages, cast):
    markup = Markup(html(pages.as_user(cast.member).get("/endpoints/new")))

    (panel,) = markup.find("div", id="schedule-preview")
    assert "hidden" in panel
    assert panel["data-url"] == PREVIEW
    assert not markup.find("time")


def test_the_form_sets_shows_and_clears_a_slug(pages, cast, heartbeat):
    form = {
        "project": str(cast.project.pk),
        "name": "Nightly backup",
        "type": "heartbeat",
        "target": "",
        "slug": "nightly",
        "interval_seconds": "3600",
        "timeout_seconds": "",
        "failure_threshold": "1",
        "recovery_threshold": "1",
        "sla_target": "99.9",
        "config": "",
    }
    url = f"/endpoints/{heartbeat.pk}/edit"
    assert pages.as_user(cast.member).post(url, form).status_code == 302
    heartbeat.refresh_from_db()
    assert heartbeat.slug == "nightly"
    (box,) = Markup(html(pages.get(url))).find("input", name="slug")
    assert box["value"] == "nightly"

    assert pages.post(url, {**form, "slug": ""}).status_code == 302
    heartbeat.refresh_from_db()
    assert heartbeat.slug is None


def test_a_bad_slug_is_named_on_the_form(pages, cast, heartbeat):
    form = {"name": "Nightly backup", "type": "heartbeat", "slug": "Not A Slug"}
    response = pages.as_user(cast.member).post(f"/endpoints/{heartbeat.pk}/edit", form)

    assert response.status_code == 400
    assert Markup(html(response)).find("input", name="slug", aria_invalid="true")
    heartbeat.refresh_from_db()
    assert heartbeat.slug is None


# --- The schedule preview route --------------------------------------------------------------


def test_the_preview_answers_the_next_five_cron_times_in_the_zone(pages, cast):
    query = {"cron": "*/5 * * * *", "timezone": "America/New_York", "interval_seconds": "60"}
    with time_machine.travel(T0, tick=False):
        response = pages.as_user(cast.member).get(PREVIEW, query)

    assert response.status_code == 200
    body = response.json()
    assert body["times"] == [f"2030-01-07T07:{m:02d}:00-05:00" for m in (5, 10, 15, 20, 25)]
    assert body["shown"][0] == "2030-01-07 07:05 EST"
    assert body["description"] == "cron `*/5 * * * *` (America/New_York)"


def test_the_preview_of_a_period_counts_from_now_in_utc(pages, cast):
    with time_machine.travel(T0, tick=False):
        response = pages.as_user(cast.member).get(PREVIEW, {"interval_seconds": "86400"})

    assert response.status_code == 200
    assert response.json()["times"][:2] == [
        "2030-01-08T12:00:00+00:00",
        "2030-01-09T12:00:00+00:00",
    ]
    assert response.json()["description"] == "every 1 d"


@pytest.mark.parametrize(
    ("query", "fields"),
    [
        ({"cron": "61 * * * *", "timezone": "UTC"}, {"cron"}),
        ({"cron": "*/5 * * * *", "timezone": "Mars/Olympus"}, {"timezone"}),
        ({"cron": "61 * * * *", "timezone": "Nowhere"}, {"cron", "timezone"}),
        ({"cron": "* " * 200, "timezone": "UTC"}, {"cron"}),
        ({"interval_seconds": "30"}, {"interval_seconds"}),
        ({"interval_seconds": "hourly"}, {"interval_seconds"}),
        ({"interval_seconds": "9" * 5000}, {"interval_seconds"}),
        ({}, {"interval_seconds"}),
    ],
)
def test_a_bad_schedule_is_a_400_naming_each_field(pages, cast, query, fields):
    response = pages.as_user(cast.member).get(PREVIEW, query)

    body = assert_problem(response, 400, "validation_error")
    assert set(body["errors"]) == fields


def test_the_preview_names_the_cron_fields_problem(pages, cast):
    response = pages.as_user(cast.member).get(PREVIEW, {"cron": "61 * * * *"})

    body = assert_problem(response, 400, "validation_error")
    assert body["errors"]["cron"] == [
        "Not a valid cron expression: minute 61 is out of range (0-59)."
    ]


def test_the_preview_needs_a_signed_in_user(pages, cast):
    response = pages.as_user(None).get(PREVIEW, {"cron": "*/5 * * * *"})

    assert response.status_code == 302
    assert response["Location"].startswith("/login?next=")
    assert b"times" not in response.content


def test_the_preview_reads_nothing_of_any_organization(pages, cast, api):
    """It computes from its query alone: an outsider asking with a heartbeat's id learns
    nothing of it, and gets what anyone typing the same schedule gets."""
    heartbeat = create(api, cast, config={"cron": "0 9 * * *", "timezone": "Europe/Berlin"})
    query = {"interval_seconds": "3600", "endpoint": str(heartbeat.pk), "id": str(heartbeat.pk)}

    with time_machine.travel(T0, tick=False):
        pages.as_user(cast.outsider)
        with CaptureQueriesContext(connection) as queries:
            outsider = pages.get(PREVIEW, query).json()
        member = pages.as_user(cast.member).get(PREVIEW, {"interval_seconds": "3600"}).json()

    assert outsider == member
    assert not [q for q in queries if "monitoring_" in q["sql"]]
    assert outsider["description"] == "every 1 h"


def test_the_preview_answers_get_only(pages, cast):
    assert pages.as_user(cast.member).post(PREVIEW, {"cron": "* * * * *"}).status_code == 405

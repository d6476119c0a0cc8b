"""Heartbeat schedules: periods, and cron read in a time zone across the 2026 DST changes.

Expected instants are written out by hand from the zone rules: New York moves 02:00 EST ->
03:00 EDT on 2026-03-08 (07:00 UTC) and 02:00 EDT -> 01:00 EST on 2026-11-01 (06:00 UTC);
Berlin 02:00 CET -> 03:00 CEST on 2026-03-29 and 03:00 CEST -> 02:00 CET on 2026-10-25
(both at 01:00 UTC).
"""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from monitoring.schedules import (
    Schedule,
    describe,
    next_due,
    schedule_errors,
    schedule_of,
    upcoming,
)

NEW_YORK = ZoneInfo("America/New_York")
EVERY_5_NY = schedule_of(60, {"cron": "*/5 * * * *", "timezone": "America/New_York"})
BERLIN_0230 = schedule_of(60, {"cron": "30 2 * * *", "timezone": "Europe/Berlin"})


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def clock(times: list[datetime], zone: ZoneInfo | None = None, fmt: str = "%H:%M") -> str:
    return " ".join(t.astimezone(zone or UTC).strftime(fmt) for t in times)


def test_every_5_minutes_in_new_york_runs_straight_through_spring_forward():
    times = upcoming(EVERY_5_NY, utc("2026-03-08 05:57"), count=24)

    assert {t.strftime("%m-%d") for t in times} == {"03-08"}
    assert clock(times) == (
        "06:00 06:05 06:10 06:15 06:20 06:25 06:30 06:35 06:40 06:45 06:50 06:55 "
        "07:00 07:05 07:10 07:15 07:20 07:25 07:30 07:35 07:40 07:45 07:50 07:55"
    )
    # The wall clock skips 02:00-02:59: cron has no such minutes to run at.
    assert clock(times, NEW_YORK, "%H:%M%z") == (
        "01:00-0500 01:05-0500 01:10-0500 01:15-0500 01:20-0500 01:25-0500 "
        "01:30-0500 01:35-0500 01:40-0500 01:45-0500 01:50-0500 01:55-0500 "
        "03:00-0400 03:05-0400 03:10-0400 03:15-0400 03:20-0400 03:25-0400 "
        "03:30-0400 03:35-0400 03:40-0400 03:45-0400 03:50-0400 03:55-0400"
    )


def test_every_5_minutes_in_new_york_runs_the_repeated_hour_twice_on_fall_back():
    times = upcoming(EVERY_5_NY, utc("2026-11-01 04:57"), count=24)

    assert {t.strftime("%m-%d") for t in times} == {"11-01"}
    assert clock(times) == (
        "05:00 05:05 05:10 05:15 05:20 05:25 05:30 05:35 05:40 05:45 05:50 05:55 "
        "06:00 06:05 06:10 06:15 06:20 06:25 06:30 06:35 06:40 06:45 06:50 06:55"
    )
    assert clock(times, NEW_YORK, "%H:%M%z") == (
        "01:00-0400 01:05-0400 01:10-0400 01:15-0400 01:20-0400 01:25-0400 "
        "01:30-0400 01:35-0400 01:40-0400 01:45-0400 01:50-0400 01:55-0400 "
        "01:00-0500 01:05-0500 01:10-0500 01:15-0500 01:20-0500 01:25-0500 "
        "01:30-0500 01:35-0500 01:40-0500 01:45-0500 01:50-0500 01:55-0500"
    )


@pytest.mark.parametrize(
    ("after", "due"),
    [
        ("2026-03-08 06:55", "2026-03-08 07:00"),  # 01:55 EST -> 03:00 EDT, strictly after
        ("2026-03-08 06:58:30", "2026-03-08 07:00"),
        ("2026-11-01 05:55", "2026-11-01 06:00"),  # 01:55 EDT -> 01:00 EST
        ("2026-11-01 06:02", "2026-11-01 06:05"),  # inside the second 01:xx
    ],
)
def test_next_due_in_new_york_at_the_changes(after, due):
    assert next_due(EVERY_5_NY, utc(after)) == utc(due)


def test_0230_in_berlin_on_spring_forward_runs_right_after_the_jump_like_debian_cron():
    times = upcoming(BERLIN_0230, utc("2026-03-27 12:00"), count=4)

    # 02:30 CET; 02:30 does not exist on the 29th: 03:00 CEST; then 02:30 CEST.
    assert times == [
        utc("2026-03-28 01:30"),
        utc("2026-03-29 01:00"),
        utc("2026-03-30 00:30"),
        utc("2026-03-31 00:30"),
    ]
    assert next_due(BERLIN_0230, utc("2026-03-29 00:59")) == utc("2026-03-29 01:00")
    assert next_due(BERLIN_0230, utc("2026-03-29 01:00")) == utc("2026-03-30 00:30")


def test_0230_in_berlin_on_fall_back_runs_once_in_the_repeated_hour():
    times = upcoming(BERLIN_0230, utc("2026-10-24 12:00"), count=3)

    # The first 02:30 (CEST) only, then 02:30 CET.
    assert times == [utc("2026-10-25 00:30"), utc("2026-10-26 01:30"), utc("2026-10-27 01:30")]
    assert clock(times[:2], ZoneInfo("Europe/Berlin"), "%H:%M%z") == "02:30+0200 02:30+0100"
    # From 02:15 CET, the second pass of the hour, the 02:30 that follows is not run again.
    assert next_due(BERLIN_0230, utc("2026-10-25 01:15")) == utc("2026-10-26 01:30")
    assert next_due(BERLIN_0230, utc("2026-10-25 00:45")) == utc("2026-10-26 01:30")


def test_a_period_schedule_is_due_one_period_later_in_utc():
    schedule = schedule_of(3600, {"grace_seconds": 60})
    after = datetime(2026, 3, 8, 1, 30, tzinfo=NEW_YORK)

    assert schedule == Schedule(period=timedelta(hours=1), cron=None, timezone="UTC")
    due = next_due(schedule, after)
    assert due == utc("2026-03-08 07:30")
    assert due.tzinfo is UTC
    assert upcoming(schedule, after, count=3) == [
        utc("2026-03-08 07:30"),
        utc("2026-03-08 08:30"),
        utc("2026-03-08 09:30"),
    ]


def test_upcoming_gives_five_increasing_utc_times():
    schedule = schedule_of(60, {"cron": "0 9 * * MON-FRI", "timezone": "Europe/Berlin"})

    times = upcoming(schedule, utc("2026-11-26 13:00"))  # a Thursday

    assert times == [
        utc("2026-11-27 08:00"),
        utc("2026-11-30 08:00"),
        utc("2026-12-01 08:00"),
        utc("2026-12-02 08:00"),
        utc("2026-12-03 08:00"),
    ]
    assert all(t.tzinfo is UTC for t in times)
    assert times == sorted(set(times))


def test_a_cron_without_a_zone_is_read_in_utc():
    schedule = schedule_of(60, {"cron": "0 0 * * *"})

    assert schedule == Schedule(period=None, cron="0 0 * * *", timezone="UTC")
    assert next_due(schedule, utc("2026-03-29 00:00")) == utc("2026-03-30 00:00")


def test_next_due_refuses_a_naive_time():
    with pytest.raises(ValueError, match="aware"):
        next_due(EVERY_5_NY, datetime(2026, 1, 1))  # noqa: DTZ001


NOT_CRON = "Not a valid cron expression: "
FIELDS_5 = "cron takes 5 (minute hour day-of-month month day-of-week)."


@pytest.mark.parametrize(
    ("cron", "message"),
    [
        ("61 * * * *", "minute 61 is out of range (0-59)."),
        ("0 24 * * *", "hour 24 is out of range (0-23)."),
        ("0 0 0 * *", "day-of-month 0 is out of range (1-31)."),
        ("0 0 * 13 *", "month 13 is out of range (1-12)."),
        ("0 0 31 2 *", "day-of-month 31 never comes in the months given."),
        ("*/0 * * * *", "the minute field `*/0` is not valid (0-59)."),
        ("0 0 * * FUN", "the day-of-week field `FUN` is not valid (0-7)."),
        ("5-1 * * * *", "the minute field `5-1` is not valid (0-59)."),
        ("* * * *", "it has 4 fields; " + FIELDS_5),
        ("* * * * * *", "it has 6 fields; " + FIELDS_5),
        ("", "it has 0 fields; " + FIELDS_5),
        ("9" * 5000 + " * * * *", "a number in it is far too large."),
        (5, "it must be text such as `*/5 * * * *`."),
        (["*/5", "*", "*", "*", "*"], "it must be text such as `*/5 * * * *`."),
    ],
)
def test_a_bad_cron_is_named_in_words(cron, message):
    assert schedule_errors({"cron": cron}) == {"config.cron": [NOT_CRON + message]}


@pytest.mark.parametrize("zone", ["Mars/Olympus", "localtime", "../etc/passwd", "", 7, ["UTC"]])
def test_an_unknown_zone_is_refused(zone):
    errors = schedule_errors({"cron": "*/5 * * * *", "timezone": zone})

    assert list(errors) == ["config.timezone"]
    assert errors["config.timezone"][0].startswith("Unknown time zone")
    assert "use an IANA name such as Europe/Berlin or UTC." in errors["config.timezone"][0]


def test_a_bad_cron_and_a_bad_zone_are_both_named():
    assert schedule_errors({"cron": "61 * * * *", "timezone": "Europe/Berln"}) == {
        "config.cron": [NOT_CRON + "minute 61 is out of range (0-59)."],
        "config.timezone": [
            "Unknown time zone “Europe/Berln”: use an IANA name such as Europe/Berlin or UTC."
        ],
    }


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"cron": "*/5 * * * *", "timezone": "America/New_York"},
        {"cron": "0 9 * * mon-fri"},
        {"cron": "30 2 L * *", "timezone": "UTC"},
        {"cron": None, "timezone": None},
        {"timezone": "Etc/UTC"},
    ],
)
def test_a_good_schedule_has_no_errors(config):
    assert schedule_errors(config) == {}


def test_describe_says_the_schedule():
    assert describe(schedule_of(3600, {})) == "every 1 h"
    assert describe(schedule_of(90, {})) == "every 1 min 30 s"
    assert describe(EVERY_5_NY) == "cron `*/5 * * * *` (America/New_York)"
    assert describe(schedule_of(60, {"cron": "0 0 * * *"})) == "cron `0 0 * * *` (UTC)"

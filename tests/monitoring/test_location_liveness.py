"""Probe locations kept alive by their workers' heartbeats; the watch loop turns a silent one
offline once, tells the operators once, parks the endpoints it strands, and resolves the
outage when a worker is heard again."""

import os
import subprocess
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connections

from accounts.models import User
from monitoring.locations_live import (
    endpoints_strand,
    location_heartbeat,
    locations_sync_settings,
    locations_watch,
    probes_from,
)
from monitoring.models import (
    Endpoint,
    EndpointStatus,
    Location,
    LocationOutage,
    LocationWorker,
    StatusChange,
)
from tests.faults.processes import Processes, RedisServer, database_url, wait_for

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(seconds=60)


@pytest.fixture
def operators(cast):
    """Two active staff users with addresses; staff gone and customers are not told."""
    org = cast.org
    staff = [
        User.objects.create_user(f"ops{n}@ops.test", organization=org, is_staff=True)
        for n in range(2)
    ]
    User.objects.create_user("gone@ops.test", organization=org, is_staff=True, is_active=False)
    return sorted(user.email for user in staff)


def listing(endpoint, *slugs, status=EndpointStatus.UP):
    Endpoint.objects.filter(pk=endpoint.pk).update(locations=list(slugs), status=status)
    endpoint.refresh_from_db()
    return endpoint


def test_a_first_heartbeat_creates_its_location_and_later_ones_keep_it(settings, db):
    settings.PROBE_LOCATIONS = [("eu-west", "Frankfurt")]

    location_heartbeat(slug="eu-west", hostname="a@host1", now=NOW)
    location_heartbeat(slug="eu-west", hostname="b@host2", now=NOW + timedelta(seconds=15))
    location_heartbeat(slug="ap-south", hostname="c@host3", now=NOW)

    frankfurt = Location.objects.get(slug="eu-west")
    assert (frankfurt.name, frankfurt.online) == ("Frankfurt", True)
    assert frankfurt.last_seen_at == NOW + timedelta(seconds=15)
    assert Location.objects.get(slug="ap-south").name == "ap-south"  # not defined: its slug
    workers = LocationWorker.objects.filter(location=frankfurt)
    assert sorted(workers.values_list("hostname", "last_seen_at")) == [
        ("a@host1", NOW),
        ("b@host2", NOW + timedelta(seconds=15)),
    ]


def test_a_renamed_location_keeps_its_name_through_heartbeats(db):
    location_heartbeat(slug="eu-west", hostname="a@host1", now=NOW)
    Location.objects.filter(slug="eu-west").update(name="Frankfurt (admin)")

    location_heartbeat(slug="eu-west", hostname="a@host1", now=NOW + timedelta(seconds=15))

    assert Location.objects.get(slug="eu-west").name == "Frankfurt (admin)"


def test_probe_locations_from_settings_get_rows_named_and_never_deleted(settings, db):
    Location.objects.create(slug="old", name="Old place")
    Location.objects.create(slug="eu-west", name="eu-west")
    settings.PROBE_LOCATIONS = [("eu-west", "Frankfurt"), ("us-east", "Virginia")]

    assert locations_sync_settings() == 2

    assert sorted(Location.objects.values_list("slug", "name", "online")) == [
        ("eu-west", "Frankfurt", False),
        ("old", "Old place", False),
        ("us-east", "Virginia", False),
    ]


def test_only_workers_of_a_locations_queues_keep_it_alive(settings):
    settings.PROBE_DEFAULT_LOCATION = "default"
    assert probes_from("default", ["celery", "dispatch"])
    assert probes_from("default", ["slow"])
    assert not probes_from("default", ["dispatch"])  # the dispatcher's worker probes nothing
    assert probes_from("eu-west", ["probes.eu-west"])
    assert not probes_from("eu-west", ["celery"])


def test_a_location_silent_for_a_minute_goes_offline_once_and_its_operators_hear_once(
    operators, outbox, log_lines
):
    location_heartbeat(slug="eu-west", hostname="a@host1", now=NOW)

    assert locations_watch(NOW + MINUTE - timedelta(seconds=1)) == 0  # not yet
    assert outbox == []
    assert locations_watch(NOW + MINUTE + timedelta(seconds=1)) == 1
    assert locations_watch(NOW + MINUTE + timedelta(seconds=6)) == 0

    location = Location.objects.get(slug="eu-west")
    assert location.online is False
    outage = LocationOutage.objects.get()
    assert (outage.location, outage.started_at, outage.resolved_at) == (location, NOW, None)
    assert outage.announced_at == NOW + MINUTE + timedelta(seconds=1)
    assert sorted(m.to[0] for m in outbox) == operators  # one mail each, nobody else
    assert {m.subject for m in outbox} == {"Probe location eu-west is offline"}
    assert "since 2030-01-01 12:00:00 UTC" in outbox[0].body
    assert [(line["location"], line["since"]) for line in log_lines.events("location_offline")] == [
        ("eu-west", NOW.isoformat())
    ]


def test_a_location_heard_again_resolves_its_outage_and_says_so(operators, outbox, log_lines):
    location_heartbeat(slug="eu-west", hostname="a@host1", now=NOW)
    locations_watch(NOW + MINUTE * 2)
    outbox.clear()

    back = NOW + MINUTE * 5
    location_heartbeat(slug="eu-west", hostname="a@host1", now=back)
    locations_watch(back + timedelta(seconds=2))
    locations_watch(back + timedelta(seconds=7))

    outage = LocationOutage.objects.get()
    assert outage.resolved_at == back + timedelta(seconds=2)
    assert Location.objects.get(slug="eu-west").online is True
    assert {m.subject for m in outbox} == {"Probe location eu-west is back online"}
    assert len(outbox) == len(operators)
    assert [line["location"] for line in log_lines.events("location_online")] == ["eu-west"]

    # Silent again: a second outage, told again.
    locations_watch(back + MINUTE * 2)
    assert LocationOutage.objects.filter(resolved_at__isnull=True).count() == 1
    assert LocationOutage.objects.count() == 2


def test_a_mail_that_fails_is_tried_again_on_the_next_run(operators, outbox, monkeypatch):
    from django.core import mail

    location_heartbeat(slug="eu-west", hostname="a@host1", now=NOW)
    send = mail.send_mass_mail

    def refused(*args, **kwargs):
        raise ConnectionRefusedError("SMTP server away")

    monkeypatch.setattr(mail, "send_mass_mail", refused)
    locations_watch(NOW + MINUTE * 2)
    assert LocationOutage.objects.get().announced_at is None

    monkeypatch.setattr(mail, "send_mass_mail", send)
    locations_watch(NOW + MINUTE * 2 + timedelta(seconds=5))
    assert LocationOutage.objects.get().announced_at is not None
    assert len(outbox) == len(operators)


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("two watch loops on two connections racing for the same rows")
def test_two_watch_loops_racing_flip_announce_and_resolve_each_outage_once(operators, outbox):
    for slug in ("eu-west", "us-east", "ap-south"):
        location_heartbeat(slug=slug, hostname=f"w@{slug}", now=NOW)

    def race(now):
        barrier, flipped = threading.Barrier(2), []

        def watch():
            try:
                barrier.wait()
                flipped.append(locations_watch(now))
            finally:
                connections.close_all()

        threads = [threading.Thread(target=watch) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return sorted(flipped)

    assert race(NOW + MINUTE * 2) in ([0, 3], [1, 2])  # each location flipped by one of them
    assert LocationOutage.objects.filter(resolved_at__isnull=True).count() == 3
    assert len(outbox) == 3 * len(operators)

    outbox.clear()
    later = NOW + MINUTE * 3
    location_heartbeat(slug="eu-west", hostname="w@eu-west", now=later)
    race(later + timedelta(seconds=1))
    assert LocationOutage.objects.filter(resolved_at__isnull=False).count() == 1
    assert [m.subject for m in outbox] == ["Probe location eu-west is back online"] * len(operators)


def test_endpoints_whose_every_location_is_offline_wait_as_pending(
    cast, make_endpoint, record, settings
):
    settings.PROBE_DEFAULT_LOCATION = "default"
    for slug in ("eu-west", "us-east"):
        location_heartbeat(slug=slug, hostname=f"w@{slug}", now=NOW)
    location_heartbeat(slug="us-east", hostname="w@us-east", now=NOW + MINUTE)
    stranded = listing(make_endpoint(cast.project, name="stranded"), "eu-west")
    both = listing(make_endpoint(cast.project, name="both"), "eu-west", "us-east")
    listing(make_endpoint(cast.project, name="with default"), "default", "eu-west")
    listing(make_endpoint(cast.project, name="plain"))
    heartbeat = make_endpoint(cast.project, name="cron", type="heartbeat", interval_seconds=60)
    Endpoint.objects.filter(pk=heartbeat.pk).update(locations=["eu-west"], status="up")

    locations_watch(NOW + MINUTE + timedelta(seconds=5))

    statuses = dict(Endpoint.objects.values_list("name", "status"))
    assert statuses == {
        "stranded": "pending",
        "both": "up",  # us-east still answers
        "with default": "up",  # the default location is always dispatched to
        "plain": "up",
        "cron": "up",  # pinged, never probed
    }
    change = StatusChange.objects.get(endpoint=stranded)
    assert (change.from_status, change.to_status) == ("up", "pending")
    assert change.reason == "No probe location online: eu-west offline"
    assert change.changed_at == NOW + MINUTE + timedelta(seconds=5)

    # Both gone: the reason names both; parked once however often the loop runs.
    later = NOW + MINUTE * 3
    assert endpoints_strand(now=later) == 1
    assert endpoints_strand(now=later) == 0
    assert StatusChange.objects.get(endpoint=both).reason == (
        "No probe location online: eu-west, us-east offline"
    )

    # A location answers again: the check pipeline moves the endpoint on as always.
    location_heartbeat(slug="eu-west", hostname="w@eu-west", now=later)
    record(stranded, [(later + timedelta(seconds=1), True, 12.0)])
    stranded.refresh_from_db()
    assert stranded.status == EndpointStatus.UP
    back = stranded.status_changes.get(to_status="up", from_status="pending")
    assert back.changed_at == later + timedelta(seconds=1)  # not before it was parked
    both.refresh_from_db()
    assert both.status == EndpointStatus.PENDING  # no check of it yet


def test_the_default_location_shows_silence_but_never_parks_an_endpoint(
    cast, make_endpoint, settings, operators, outbox
):
    settings.PROBE_DEFAULT_LOCATION = "default"
    location_heartbeat(slug="default", hostname="w@host", now=NOW)
    plain = listing(make_endpoint(cast.project))
    named = listing(make_endpoint(cast.project, name="named"), "default")

    locations_watch(NOW + MINUTE * 2)

    assert Location.objects.get(slug="default").online is False
    assert LocationOutage.objects.filter(location__slug="default").count() == 1
    plain.refresh_from_db()
    named.refresh_from_db()
    assert (plain.status, named.status) == ("up", "up")


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("the worker process needs the test database on a server")
def test_a_worker_started_with_a_location_makes_it_online(tmp_path: Path):
    server = RedisServer(tmp_path)
    processes = Processes(
        tmp_path,
        {
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": server.url(),
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "PROBE_LOCATION": "eu-west",
            "PROBE_LOCATIONS": "eu-west:Frankfurt",
        },
    )
    try:
        processes.worker("probe", "--concurrency=1", queues="probes.eu-west")
        took = wait_for(
            lambda: Location.objects.filter(slug="eu-west", online=True).exists(), timeout=20
        )
        location = Location.objects.get(slug="eu-west")
        assert location.name == "Frankfurt"
        assert [w.hostname.split("@")[0] for w in location.workers.all()] == ["probe"]
        assert took < 20
    finally:
        processes.stop_all()
        processes.print_logs()
        server.kill()


def test_make_worker_with_a_location_runs_a_worker_of_that_location_only():
    root = Path(__file__).resolve().parents[2]
    outside_make = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MAKELEVEL"}}
    command = ["make", "--no-print-directory", "-n", "-o", ".venv/.installed"]
    dry_run = subprocess.run(  # noqa: S603
        [*command, "worker", "LOCATION=eu-west"],
        cwd=root,
        env=outside_make,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    line = dry_run.strip().splitlines()[-1]

    assert line.startswith("PROBE_LOCATION=eu-west ")
    assert line.endswith(
        "celery -A healthmon worker -Q probes.eu-west -n eu-west@%h --loglevel=INFO"
    )

"""Every escalation step and reminder carries the incident's one-click acknowledge link, in
each kind's own form: the webhook's `incident.ack_url`, an `Acknowledge: <link>` line in
mail, Slack, Teams, Discord and Apprise bodies, as real local receivers got them."""

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.core import mail

from accounts.services import project_create
from alerts import services
from alerts.escalation_validation import StepInput
from alerts.models import NotificationChannel
from alerts.services import escalations_run
from monitoring.acknowledgement import ack_link
from tests.alerts.receiver import Receiver, apprise_channel, webhook

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]

T0 = datetime(2030, 3, 4, 10, 0, tzinfo=UTC)
URL_KINDS = ("webhook", "slack", "teams", "discord", "apprise")
HEADLINES = (
    "ESCALATED (step 1 of 1): Checkout API (Default) is down",
    "STILL DOWN, not acknowledged (reminder 1): Checkout API (Default)",
)


@pytest.fixture
def peers() -> Iterator[dict[str, Receiver]]:
    found = {kind: Receiver() for kind in URL_KINDS}
    try:
        yield found
    finally:
        for peer in found.values():
            peer.stop()


@pytest.fixture
def channels(cast: Any, peers: dict[str, Receiver]) -> list[NotificationChannel]:
    """One channel of each kind, narrowed to another project: they hear of the incident
    through the policy alone."""
    elsewhere = [project_create(organization=cast.org, name="Elsewhere")]
    host = peers["apprise"].url.split("/")[2]
    made = [
        webhook(cast, peers["webhook"].url, name="Hook", projects=elsewhere),
        apprise_channel(cast, f"json://{host}/apprise", name="Apprise", projects=elsewhere),
        services.channel_create(
            organization=cast.org,
            name="Mail",
            kind="email",
            config={"addresses": ["oncall@example.com"], "to_members": False},
            projects=elsewhere,
        ),
    ]
    made += [
        services.channel_create(
            organization=cast.org,
            name=kind,
            kind=kind,
            config={"url": peers[kind].url},
            projects=elsewhere,
        )
        for kind in ("slack", "teams", "discord")
    ]
    return made


@pytest.fixture
def incident(cast, endpoint, channels, go_down, django_capture_on_commit_callbacks):
    """Open, under a one-step policy reminding every 30 min; the step and reminder 1 sent."""
    services.escalation_policy_create(
        organization=cast.org,
        name="Everyone",
        steps=[StepInput(0, tuple(channels))],
        repeat_every_minutes=30,
    )
    with time_machine.travel(T0, tick=False):
        go_down(endpoint, at=T0)
    for moment in (T0 + timedelta(seconds=5), T0 + timedelta(minutes=30)):
        with (
            time_machine.travel(moment, tick=False),
            django_capture_on_commit_callbacks(execute=True),
        ):
            assert escalations_run() == len(channels)
    return endpoint.incidents.get()


def bodies(peer: Receiver) -> list[dict[str, Any]]:
    return [json.loads(request.body) for request in peer.requests]


def test_the_webhook_step_and_reminder_carry_ack_url(incident, peers):
    sent = bodies(peers["webhook"])

    assert [(b["event"], b["escalation"]["reminder"]) for b in sent] == [
        ("incident.escalated", 0),
        ("incident.escalated", 1),
    ]
    assert [b["incident"]["ack_url"] for b in sent] == [ack_link(incident.pk)] * 2
    assert ack_link(incident.pk).startswith("https://healthmon.test/ack/")


def test_mail_step_and_reminder_carry_the_link(incident):
    line = f"Acknowledge: {ack_link(incident.pk)}"

    assert [m.subject for m in mail.outbox] == [f"[healthmon] {h}" for h in HEADLINES]
    assert [m.to for m in mail.outbox] == [["oncall@example.com"]] * 2
    assert all(line in m.body.splitlines() for m in mail.outbox)


def test_slack_step_and_reminder_carry_the_link(incident, peers):
    line = f"Acknowledge: {ack_link(incident.pk)}"
    texts = [b["text"].splitlines() for b in bodies(peers["slack"])]

    assert [lines[0] for lines in texts] == [f"*{h}*" for h in HEADLINES]
    assert all(line in lines for lines in texts)


def test_teams_step_and_reminder_carry_the_link(incident, peers):
    line = f"Acknowledge: {ack_link(incident.pk)}"
    cards = [b["attachments"][0]["content"]["body"] for b in bodies(peers["teams"])]
    texts = [[block["text"] for block in card] for card in cards]

    assert [lines[0] for lines in texts] == list(HEADLINES)
    assert all(line in lines for lines in texts)


def test_discord_step_and_reminder_carry_the_link(incident, peers):
    line = f"Acknowledge: {ack_link(incident.pk)}"
    texts = [b["content"].splitlines() for b in bodies(peers["discord"])]

    assert [lines[0] for lines in texts] == [f"**{h}**" for h in HEADLINES]
    assert all(line in lines for lines in texts)


def test_apprise_step_and_reminder_carry_the_link(incident, peers):
    line = f"Acknowledge: {ack_link(incident.pk)}"
    sent = bodies(peers["apprise"])

    assert [b["title"] for b in sent] == list(HEADLINES)
    assert all(line in b["message"].splitlines() for b in sent)

"""Which policy an incident follows when it opens (the most specific covering its endpoint,
ties to the oldest), and how every channel kind renders an escalation."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from accounts.services import project_create
from alerts import messages, services
from alerts.escalation_validation import StepInput
from alerts.models import ChannelKind, Escalation

pytestmark = pytest.mark.django_db

T0 = datetime(2030, 3, 4, 10, 0, tzinfo=UTC)


def mail_channel(cast, name="Ops"):
    return services.channel_create(
        organization=cast.org,
        name=name,
        kind="email",
        config={"addresses": ["ops@example.com"], "to_members": False},
    )


def policy(cast, name, after=3, **scope):
    return services.escalation_policy_create(
        organization=cast.org, name=name, steps=[StepInput(after, (mail_channel(cast),))], **scope
    )


def opened(record, endpoint):
    with time_machine.travel(T0, tick=False):
        record(endpoint, [(T0, False, 20.0)])
    return Escalation.objects.get(incident__endpoint=endpoint)


def test_the_most_specific_policy_wins_and_the_first_step_is_due_its_delay_after_the_start(
    cast, make_endpoint, record
):
    named = make_endpoint(cast.project, name="Named", failure_threshold=1)
    in_project = make_endpoint(cast.project, name="In project", failure_threshold=1)
    other = project_create(organization=cast.org, name="Other")
    elsewhere = make_endpoint(other, name="Elsewhere", failure_threshold=1)
    policy(cast, "Whole org (old)", after=1)
    policy(cast, "Whole org (new)", after=2)
    by_project = policy(cast, "Project", projects=[cast.project])
    by_endpoint = policy(cast, "Endpoint", after=7, endpoints=[named])

    assert opened(record, named).policy == by_endpoint
    assert opened(record, named).next_escalation_at == T0 + timedelta(minutes=7)
    assert opened(record, in_project).policy == by_project
    org_wide = opened(record, elsewhere)
    assert org_wide.policy.name == "Whole org (old)"
    assert org_wide.next_escalation_at == T0 + timedelta(minutes=1)


def test_an_incident_no_policy_covers_does_not_escalate(cast, make_endpoint, record):
    other = project_create(organization=cast.org, name="Other")
    policy(cast, "Other project only", projects=[other])
    endpoint = make_endpoint(cast.project, failure_threshold=1)
    with time_machine.travel(T0, tick=False):
        record(endpoint, [(T0, False, 20.0)])

    assert not Escalation.objects.exists()


def test_every_channel_kind_renders_a_step_and_a_reminder(cast, make_endpoint, record):
    endpoint = make_endpoint(cast.project, name="Checkout API", failure_threshold=1)
    with time_machine.travel(T0, tick=False):
        record(endpoint, [(T0, False, 20.0, "unexpected status 503")])
    incident = endpoint.incidents.get()

    def document(reminder):
        return messages.escalation_document(
            event_id="k",
            occurred_at=T0,
            incident=incident,
            endpoint=endpoint,
            project_name="Shop",
            policy_id="p",
            policy_name="On-call",
            step=2,
            steps=3,
            reminder=reminder,
        )

    step, reminder = document(0), document(1)
    assert messages.mail_subject(step) == (
        "[healthmon] ESCALATED (step 2 of 3): Checkout API (Shop) is down"
    )
    assert messages.mail_subject(reminder) == (
        "[healthmon] STILL DOWN, not acknowledged (reminder 1): Checkout API (Shop)"
    )
    body = messages.mail_body(step)
    assert "Cause: unexpected status 503" in body
    assert "Escalation policy: On-call, step 2 of 3" in body
    assert "ESCALATED (step 2 of 3)" in messages.chat_body(ChannelKind.SLACK, step)["text"]
    assert "ESCALATED" in messages.chat_body(ChannelKind.DISCORD, step)["content"]
    card = messages.chat_body(ChannelKind.TEAMS, step)["attachments"][0]["content"]
    assert card["body"][0]["text"].startswith("ESCALATED (step 2 of 3)")
    assert any("Escalation policy: On-call" in block["text"] for block in card["body"])

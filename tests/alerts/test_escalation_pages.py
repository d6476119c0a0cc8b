"""The escalation policies pages: everyone reads the list, owners and admins create, change
and delete policies with a form that works without JavaScript (steps as rows)."""

import pytest

from alerts import services
from alerts.escalation_validation import StepInput
from alerts.models import EscalationPolicy

pytestmark = pytest.mark.django_db

LIST = "/escalation-policies"
NEW = "/escalation-policies/new"


def channel(cast, name):
    return services.channel_create(
        organization=cast.org,
        name=name,
        kind="email",
        config={"addresses": ["ops@example.com"], "to_members": False},
    )


def steps_of(policy):
    return [
        (s.after_minutes, sorted(c.name for c in s.channels.all()))
        for s in policy.steps.order_by("position")
    ]


def test_a_member_reads_the_list_without_the_forms(client, cast):
    ops = channel(cast, "Ops <room>")
    services.escalation_policy_create(
        organization=cast.org,
        name="Checkout",
        steps=[StepInput(5, (ops,))],
        repeat_every_minutes=30,
    )
    client.force_login(cast.member)

    page = client.get(LIST)

    assert page.status_code == 200
    html = page.content.decode()
    assert "Checkout" in html
    assert "after 5 min" in html
    assert "every 30 min" in html
    assert "Ops &lt;room&gt;" in html  # escaped
    assert NEW not in html
    assert "Delete" not in html
    assert client.get(NEW).status_code == 403


def test_the_alerts_page_links_to_the_policies_and_anonymous_readers_sign_in(client, cast):
    assert client.get(LIST).status_code == 302
    client.force_login(cast.member)
    assert f'href="{LIST}"' in client.get("/alerts").content.decode()


def test_an_owner_creates_a_policy_with_rows_skipping_blank_ones(client, cast):
    ops, boss = channel(cast, "Ops"), channel(cast, "Boss")
    client.force_login(cast.owner)
    form = client.get(NEW)
    assert form.status_code == 200
    assert 'name="step-2-after"' in form.content.decode()

    response = client.post(
        NEW,
        {
            "name": "Checkout",
            "step-0-after": "0",
            "step-0-channels": [str(ops.pk), str(boss.pk)],
            "step-1-after": "",
            "step-2-after": "15",
            "step-2-channels": [str(boss.pk)],
            "repeat_every_minutes": "",
        },
    )

    assert response.status_code == 302
    policy = EscalationPolicy.objects.get()
    assert (policy.name, policy.repeat_every_minutes) == ("Checkout", None)
    assert steps_of(policy) == [(0, ["Boss", "Ops"]), (15, ["Boss"])]


def test_a_bad_form_names_the_row_and_writes_nothing(client, cast):
    ops = channel(cast, "Ops")
    client.force_login(cast.admin)

    response = client.post(
        NEW,
        {
            "name": "Checkout",
            "step-0-after": "10",
            "step-0-channels": [str(ops.pk)],
            "step-1-after": "5",
            "repeat_every_minutes": "0",
        },
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert "Must be later than the step before (10 min)." in html
    assert "Give at least one channel." in html
    assert not EscalationPolicy.objects.exists()


def test_an_admin_changes_and_deletes_a_policy(client, cast):
    ops, boss = channel(cast, "Ops"), channel(cast, "Boss")
    policy = services.escalation_policy_create(
        organization=cast.org, name="Checkout", steps=[StepInput(0, (ops,))]
    )
    client.force_login(cast.admin)
    edit = f"/escalation-policies/{policy.pk}"
    shown = client.get(edit).content.decode()
    assert 'value="Checkout"' in shown
    assert f'value="{ops.pk}" checked' in shown

    changed = client.post(
        edit,
        {
            "name": "Checkout v2",
            "step-0-after": "1",
            "step-0-channels": [str(boss.pk)],
            "repeat_every_minutes": "20",
        },
    )

    assert changed.status_code == 302
    policy.refresh_from_db()
    assert (policy.name, policy.repeat_every_minutes) == ("Checkout v2", 20)
    assert steps_of(policy) == [(1, ["Boss"])]
    assert client.post(f"{edit}/delete").status_code == 302
    assert not EscalationPolicy.objects.exists()


def test_another_organization_gets_a_404(client, cast):
    policy = services.escalation_policy_create(
        organization=cast.org, name="Checkout", steps=[StepInput(0, (channel(cast, "Ops"),))]
    )
    client.force_login(cast.outsider)

    assert client.get(f"/escalation-policies/{policy.pk}").status_code == 404
    assert client.post(f"/escalation-policies/{policy.pk}/delete").status_code == 404
    assert "Checkout" not in client.get(LIST).content.decode()
    assert EscalationPolicy.objects.exists()

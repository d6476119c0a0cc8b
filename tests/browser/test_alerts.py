"""Alerts in a real browser: add a webhook channel, see its secret once, send a signed test
to a local receiver, and plan a maintenance window that shows as in progress."""

import json
import re
from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import Page, expect

from alerts.delivery import signature
from alerts.models import NotificationChannel
from tests.browser.conftest import shot, sign_in


def test_a_webhook_channel_shows_its_secret_once_and_its_test_arrives_signed(
    page: Page, cast, receiver
):
    sign_in(page, cast.owner.email)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Alerts").click()
    page.wait_for_url("**/alerts")
    page.get_by_label("Name", exact=True).first.fill("Ops hook")
    page.get_by_label("Kind").select_option("webhook")
    # The kind list now holds "Apprise URL": name the URL box by its role.
    page.get_by_role("textbox", name=re.compile(r"^URL")).fill(receiver.url)
    page.get_by_role("button", name="Add channel").click()
    shown = page.locator("#new-secret-value")
    shown.wait_for()
    secret = shown.inner_text().strip()
    assert secret == NotificationChannel.objects.get(name="Ops hook").secret
    shot(page, "alerts-channel-created")

    page.goto("/alerts")
    assert page.locator("#new-secret-value").count() == 0
    assert secret not in page.content()
    assert "SECRET-PATH" not in page.content()
    row = page.locator("tbody tr", has_text="Ops hook")
    row.get_by_role("button", name="Send a test").click()
    expect(page.get_by_text("The test reached Ops hook.")).to_be_visible()

    (request,) = receiver.requests
    assert json.loads(request.body)["event"] == "test"
    assert request.headers["x-healthmon-signature"] == signature(secret, request.body)
    expect(page.locator("tbody tr", has_text="Ops hook")).to_contain_text("delivered")


def test_a_maintenance_window_planned_in_the_form_is_in_progress(page: Page, cast):
    sign_in(page, cast.owner.email)
    page.goto("/alerts")
    now = timezone.now()
    page.get_by_label("Name (optional)").fill("Database upgrade")
    page.get_by_label("Starts (UTC)").fill((now - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M"))
    page.get_by_label("Ends (UTC)").fill((now + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M"))
    page.get_by_role("button", name="Plan window").click()
    row = page.locator("tbody tr", has_text="Database upgrade")
    expect(row).to_contain_text("in progress")
    shot(page, "alerts-window")

"""Signing in and out, inviting a teammate and API keys, in a real browser."""

import re

import requests
from playwright.sync_api import Page, expect

from tests.browser.conftest import shot, sign_in
from tests.helpers import mailed_token

INVITEE = "newbie@acme.test"
INVITEE_PASSWORD = "violet-kestrel-4417"


def test_sign_out_from_the_header(page: Page, cast):
    sign_in(page, cast.member.email)
    assert page.get_by_role("link", name=cast.member.email).is_visible()
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/login")
    assert page.get_by_text("You are signed out.").is_visible()
    page.goto("/")
    assert page.url.endswith("/login?next=/")
    assert page.get_by_role("heading", name="Sign in").is_visible()
    shot(page, "login")


def test_invite_a_user_who_accepts_the_mailed_link(page: Page, new_context, cast, outbox):
    sign_in(page, cast.owner.email)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Team").click()
    page.wait_for_url("**/team")
    invite = page.locator("#invite")
    invite.get_by_label("Email").fill(INVITEE)
    invite.get_by_label("Role").select_option("member")
    invite.get_by_label(cast.project.name).check()
    invite.get_by_role("button", name="Send invitation").click()
    # The answer redirects back to /team: wait for its message, not for the URL.
    expect(page.get_by_text(f"Invitation sent to {INVITEE}.")).to_be_visible()
    shot(page, "team")

    assert [message.to for message in outbox] == [[INVITEE]]
    token = mailed_token(outbox[0], "/accept-invite")
    invitee = new_context().new_page()  # another person's browser: no shared cookies
    invitee.goto(f"/accept-invite?token={token}")
    assert invitee.get_by_role("heading", name="Join Acme").is_visible()
    shot(invitee, "accept-invite")
    invitee.get_by_label("Password").fill(INVITEE_PASSWORD)
    invitee.get_by_role("button", name="Join").click()
    invitee.wait_for_url(re.compile(r"/$"))
    assert invitee.get_by_role("heading", name="Overview").is_visible()
    assert invitee.get_by_role("link", name=INVITEE).is_visible()
    assert invitee.get_by_text("Acme · Member").is_visible()

    page.reload()
    assert page.locator(f'tr[data-user="{INVITEE}"]').count() == 1
    assert page.get_by_text("Pending invitations").is_visible()


def test_api_key_is_shown_once_and_works(page: Page, live_server, cast, make_endpoint):
    endpoint = make_endpoint(cast.project, name="Website")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in(page, cast.member.email)
    page.goto("/api-keys")
    page.get_by_label("Name").fill("deploy script")
    page.locator('input[name="scopes"][value="endpoint:read"]').check()
    page.get_by_role("button", name="Create key").click()
    shown = page.locator("#new-key-value")
    shown.wait_for()
    key = shown.inner_text().strip()
    assert key.startswith("hm")
    assert len(key) > 30
    copy = page.locator('button[data-copy="new-key-value"]')
    assert copy.inner_text() == "Copy"
    copy.click()
    expect(copy).to_have_text("Copied")  # the clipboard answers asynchronously
    assert page.evaluate("navigator.clipboard.readText()") == key
    shot(page, "api-key-created")

    page.goto("/api-keys")
    assert page.locator("#new-key-value").count() == 0
    assert key not in page.content()
    row = page.locator("tbody tr", has_text="deploy script")
    assert row.count() == 1
    assert "endpoint:read" in row.inner_text()
    shot(page, "api-keys")

    url = f"{live_server.url}/api/v1/endpoints"
    answer = requests.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert answer.status_code == 200, answer.text
    assert [item["id"] for item in answer.json()["results"]] == [str(endpoint.pk)]
    assert requests.get(url, timeout=10).status_code == 401

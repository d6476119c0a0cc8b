"""Signing in and out, registering and the pages behind the mailed links.

The pages share the API's accounts and rules: a password set on a page works on the API
and the other way round, and what a reset revokes on one side is revoked on the other.
"""

import pytest

from accounts.models import Invitation, Organization, Project, Role, User
from tests.helpers import PASSWORD, mailed_token
from tests.web.conftest import html, visible_text

NEW_PASSWORD = "a-brand-new-passphrase-7"


def sign_in(pages, email, password=PASSWORD, **extra):
    return pages.post("/login", {"email": email, "password": password, **extra})


def api_login(api, email, password=PASSWORD):
    return api.post("/api/v1/auth/login", {"email": email, "password": password})


def api_me(api, token):
    return api.get("/api/v1/auth/me", HTTP_AUTHORIZATION=f"Bearer {token}")


def signed_in_as(pages):
    """Who the client's session belongs to (None when signed out)."""
    response = pages.get("/account")
    if response.status_code != 200:
        assert response.status_code == 302
        assert response["Location"].startswith("/login")
        return None
    return response.context["user"].email


def invite(api, cast, email="new@acme.test", role="member", projects=None):
    api.as_user(cast.owner)
    response = api.post(
        "/api/v1/users/invite",
        {"email": email, "role": role, "projects": projects or []},
        format="json",
    )
    assert response.status_code == 201, response.content
    api.as_user(None)


# --- Login and logout ---------------------------------------------------------------------------


def test_login_page_renders_a_form_with_a_csrf_token(pages, cast):
    response = pages.get("/login")

    assert response.status_code == 200
    assert 'name="csrfmiddlewaretoken"' in html(response)
    assert signed_in_as(pages) is None


def test_login_signs_in_and_goes_to_the_overview(pages, cast):
    response = sign_in(pages, "Owner@Acme.test")

    assert response.status_code == 302
    assert response["Location"] == "/"
    assert signed_in_as(pages) == "owner@acme.test"


def test_login_goes_back_to_a_local_next(pages, cast):
    target = "/endpoints/new?project=1"

    response = sign_in(pages, "member@acme.test", next=target)

    assert response.status_code == 302
    assert response["Location"] == target


def test_a_protected_page_sends_to_login_with_next_and_comes_back(pages, cast):
    bounce = pages.get("/api-keys")
    assert bounce.status_code == 302
    assert bounce["Location"] == "/login?next=/api-keys"
    form = pages.get(bounce["Location"])
    assert 'name="next" value="/api-keys"' in html(form)

    response = pages.post(bounce["Location"], {"email": "member@acme.test", "password": PASSWORD})

    assert response["Location"] == "/api-keys"


@pytest.mark.parametrize(
    "target",
    [
        "//evil.test",
        "//evil.test/path",
        "https://evil.test/",
        "http://testserver.evil.test/",
        "/\\evil.test",
        "\\\\evil.test",
        "javascript:alert(1)",
        " //evil.test",
        "/\t/evil.test",
        "\t//evil.test",
        "https:evil.test",
    ],
)
def test_login_never_follows_a_next_to_another_site(pages, cast, target):
    posted = sign_in(pages, "owner@acme.test", next=target)
    pages.logout()
    queried = pages.post(
        f"/login?next={target}", {"email": "owner@acme.test", "password": PASSWORD}
    )

    assert posted.status_code == queried.status_code == 302
    assert posted["Location"] == queried["Location"] == "/"


def test_the_login_form_does_not_carry_a_foreign_next(pages, cast):
    response = pages.get("/login?next=https://evil.test/")

    assert "evil.test" not in html(response)


def test_wrong_password_and_unknown_email_get_the_same_page(pages, cast):
    wrong = sign_in(pages, "owner@acme.test", "not-the-password-1")
    unknown = sign_in(pages, "nobody@acme.test", "not-the-password-1")

    assert wrong.status_code == unknown.status_code == 401
    assert visible_text(wrong) == visible_text(unknown)
    assert "The email or password is incorrect." in visible_text(wrong)
    assert signed_in_as(pages) is None


def test_login_with_an_invalid_email_is_a_400_with_the_field_error(pages, cast):
    response = sign_in(pages, "not-an-email", "whatever-pass-1")

    assert response.status_code == 400
    assert "valid email" in visible_text(response)
    assert signed_in_as(pages) is None


def test_a_removed_user_cannot_sign_in(pages, api, cast):
    api.as_user(cast.owner).delete(f"/api/v1/users/{cast.member.pk}")

    assert sign_in(pages, "member@acme.test").status_code == 401


def test_logout_is_post_only(pages, cast):
    pages.as_user(cast.member)

    response = pages.get("/logout")

    assert response.status_code == 405
    assert signed_in_as(pages) == "member@acme.test"


def test_logout_ends_the_session(pages, cast):
    pages.as_user(cast.member)
    old_session = pages.cookies["sessionid"].value

    response = pages.post("/logout")

    assert response.status_code == 302
    assert response["Location"] == "/login"
    assert signed_in_as(pages) is None
    replay = pages  # the old cookie is dead too, not only forgotten by this browser
    replay.cookies["sessionid"] = old_session
    assert signed_in_as(replay) is None


# --- Register -----------------------------------------------------------------------------------


def test_register_creates_organization_owner_and_default_project_and_signs_in(pages, db):
    response = pages.post(
        "/register",
        {"email": "Founder@Initech.test", "password": PASSWORD, "organization_name": "Initech"},
    )

    assert response.status_code == 302
    assert response["Location"] == "/"
    user = User.objects.get(email="founder@initech.test")
    assert user.role == Role.OWNER
    assert user.organization.name == "Initech"
    assert list(Project.objects.filter(organization=user.organization).values_list("name")) == [
        ("Default",)
    ]
    assert "Welcome to healthmon, Initech." in visible_text(pages.get("/"))
    assert signed_in_as(pages) == "founder@initech.test"


def test_register_with_a_taken_email_is_a_409_and_creates_nothing(pages, cast):
    before = (Organization.objects.count(), Project.objects.count(), User.objects.count())

    response = pages.post(
        "/register",
        {"email": "MEMBER@acme.test", "password": PASSWORD, "organization_name": "Copycat"},
    )

    assert response.status_code == 409
    assert "An account with this email already exists." in visible_text(response)
    assert (Organization.objects.count(), Project.objects.count(), User.objects.count()) == before
    assert signed_in_as(pages) is None


@pytest.mark.parametrize(
    ("password", "message"),
    [
        ("short", "This password is too short."),
        ("12345678901", "This password is entirely numeric."),
        ("password123", "This password is too common."),
    ],
)
def test_register_with_a_weak_password_is_a_400_with_the_validator_message(
    pages, db, password, message
):
    response = pages.post(
        "/register",
        {"email": "new@initech.test", "password": password, "organization_name": "Initech"},
    )

    assert response.status_code == 400
    assert message in visible_text(response)
    assert not User.objects.exists()
    assert not Organization.objects.exists()


def test_register_with_missing_fields_names_them(pages, db):
    response = pages.post("/register", {"email": "", "password": "", "organization_name": ""})

    assert response.status_code == 400
    assert visible_text(response).count("This field may not be blank.") == 3
    assert not User.objects.exists()


# --- Forgot and reset password ------------------------------------------------------------------


def test_forgot_password_answers_the_same_for_known_and_unknown_and_mails_only_known(
    pages, cast, outbox
):
    known = pages.post("/forgot-password", {"email": "member@acme.test"})
    unknown = pages.post("/forgot-password", {"email": "nobody@acme.test"})

    assert known.status_code == unknown.status_code == 200
    assert visible_text(known) == visible_text(unknown)
    assert "If an account uses this address, we have mailed it a link." in visible_text(known)
    assert [message.to for message in outbox] == [["member@acme.test"]]


def test_the_mailed_reset_link_sets_the_password_on_the_page(pages, api, cast, outbox):
    pages.post("/forgot-password", {"email": "member@acme.test"})
    token = mailed_token(outbox[0], "/reset-password")

    form = pages.get(f"/reset-password?token={token}")
    response = pages.post("/reset-password", {"token": token, "password": NEW_PASSWORD})

    assert form.status_code == 200
    assert f'name="token" value="{token}"' in html(form)
    assert response.status_code == 302
    assert response["Location"] == "/login"
    assert api_login(api, "member@acme.test").status_code == 401
    assert api_login(api, "member@acme.test", NEW_PASSWORD).status_code == 200
    assert sign_in(pages, "member@acme.test", NEW_PASSWORD)["Location"] == "/"


def test_a_reset_link_is_single_use(pages, cast, outbox):
    pages.post("/forgot-password", {"email": "member@acme.test"})
    token = mailed_token(outbox[0], "/reset-password")
    pages.post("/reset-password", {"token": token, "password": NEW_PASSWORD})

    again = pages.post("/reset-password", {"token": token, "password": "yet-another-pass-8"})

    assert again.status_code == 400
    assert "This link is invalid, expired or already used." in visible_text(again)
    assert User.objects.get(pk=cast.member.pk).check_password(NEW_PASSWORD)


@pytest.mark.parametrize("token", ["", "garbage", "x" * 600])
def test_a_bad_reset_token_is_a_400(pages, cast, token):
    response = pages.post("/reset-password", {"token": token, "password": NEW_PASSWORD})

    assert response.status_code == 400
    assert User.objects.get(pk=cast.member.pk).check_password(PASSWORD)


def test_a_reset_with_a_weak_password_is_a_400_and_keeps_the_link(pages, cast, outbox):
    pages.post("/forgot-password", {"email": "member@acme.test"})
    token = mailed_token(outbox[0], "/reset-password")

    weak = pages.post("/reset-password", {"token": token, "password": "short"})
    good = pages.post("/reset-password", {"token": token, "password": NEW_PASSWORD})

    assert weak.status_code == 400
    assert "This password is too short." in visible_text(weak)
    assert good.status_code == 302


def test_a_reset_signs_out_other_sessions_and_revokes_earlier_jwts(
    pages, make_pages, api, cast, outbox
):
    elsewhere = make_pages().as_user(cast.member)
    assert signed_in_as(elsewhere) == "member@acme.test"
    jwt = api_login(api, "member@acme.test").json()["token"]
    assert api_me(api, jwt).status_code == 200
    pages.post("/forgot-password", {"email": "member@acme.test"})

    pages.post(
        "/reset-password",
        {"token": mailed_token(outbox[0], "/reset-password"), "password": NEW_PASSWORD},
    )

    assert signed_in_as(elsewhere) is None
    assert api_me(api, jwt).status_code == 401


def test_an_api_reset_token_works_on_the_page_and_a_page_link_on_the_api(pages, api, cast, outbox):
    api.post("/api/v1/auth/forgot-password", {"email": "admin@acme.test"})
    pages.post("/forgot-password", {"email": "owner@acme.test"})
    admin_token = mailed_token(outbox[0], "/reset-password")
    owner_token = mailed_token(outbox[1], "/reset-password")

    on_page = pages.post("/reset-password", {"token": admin_token, "password": NEW_PASSWORD})
    on_api = api.post(
        "/api/v1/auth/reset-password", {"token": owner_token, "password": NEW_PASSWORD}
    )

    assert on_page.status_code == 302
    assert on_api.status_code == 200


# --- Accept an invitation -----------------------------------------------------------------------


def test_the_mailed_invitation_creates_the_user_with_its_role_and_projects(
    pages, api, cast, outbox
):
    second = Project.objects.create(organization=cast.org, name="Second")
    invite(api, cast, "New@Acme.test", "member", [str(second.pk)])
    token = mailed_token(outbox[0], "/accept-invite")

    form = pages.get(f"/accept-invite?token={token}")
    response = pages.post("/accept-invite", {"token": token, "password": PASSWORD})

    assert form.status_code == 200
    assert "Join Acme" in visible_text(form)
    assert "new@acme.test" in visible_text(form)
    assert response.status_code == 302
    assert response["Location"] == "/"
    user = User.objects.get(email="new@acme.test")
    assert (user.organization, user.role) == (cast.org, Role.MEMBER)
    assert list(user.projects.all()) == [second]
    assert signed_in_as(pages) == "new@acme.test"
    assert Invitation.objects.get().accepted_at is not None


def test_an_invitation_as_admin_makes_an_admin(pages, api, cast, outbox):
    invite(api, cast, "boss@acme.test", "admin")

    pages.post(
        "/accept-invite",
        {"token": mailed_token(outbox[0], "/accept-invite"), "password": PASSWORD},
    )

    assert User.objects.get(email="boss@acme.test").role == Role.ADMIN
    assert pages.get("/team").status_code == 200


def test_a_used_invitation_link_is_a_400_page(pages, make_pages, api, cast, outbox):
    invite(api, cast)
    token = mailed_token(outbox[0], "/accept-invite")
    pages.post("/accept-invite", {"token": token, "password": PASSWORD})
    other = make_pages()

    shown = other.get(f"/accept-invite?token={token}")
    posted = other.post("/accept-invite", {"token": token, "password": NEW_PASSWORD})

    assert shown.status_code == posted.status_code == 400
    assert "This link is invalid, expired or already used." in visible_text(shown)
    assert "This link is invalid, expired or already used." in visible_text(posted)
    assert User.objects.filter(email="new@acme.test").count() == 1
    assert signed_in_as(other) is None


@pytest.mark.parametrize("token", ["", "garbage", "y" * 600])
def test_an_invalid_invitation_token_is_a_400_page(pages, cast, token):
    shown = pages.get(f"/accept-invite?token={token}")
    posted = pages.post("/accept-invite", {"token": token, "password": PASSWORD})

    assert shown.status_code == posted.status_code == 400
    assert User.objects.count() == 4


def test_a_withdrawn_invitation_link_stops_working(pages, api, cast, outbox):
    invite(api, cast)
    token = mailed_token(outbox[0], "/accept-invite")
    pages.as_user(cast.admin).post(f"/team/invitations/{Invitation.objects.get().pk}/revoke")
    pages.as_user(None)

    response = pages.post("/accept-invite", {"token": token, "password": PASSWORD})

    assert response.status_code == 400
    assert not User.objects.filter(email="new@acme.test").exists()


def test_accepting_with_a_weak_password_keeps_the_invitation_open(pages, api, cast, outbox):
    invite(api, cast)
    token = mailed_token(outbox[0], "/accept-invite")

    weak = pages.post("/accept-invite", {"token": token, "password": "short"})
    good = pages.post("/accept-invite", {"token": token, "password": PASSWORD})

    assert weak.status_code == 400
    assert "This password is too short." in visible_text(weak)
    assert good.status_code == 302


# --- Email verification -------------------------------------------------------------------------


def test_unverified_login_is_refused_with_a_message_until_the_link_is_followed(
    pages, make_pages, db, outbox, verification_on
):
    make_pages().post(
        "/register",
        {"email": "new@initech.test", "password": PASSWORD, "organization_name": "Initech"},
    )
    token = mailed_token(outbox[0], "/verify-email")

    refused = sign_in(pages, "new@initech.test")
    form = pages.get(f"/verify-email?token={token}")
    verified = pages.post("/verify-email", {"token": token})
    accepted = sign_in(pages, "new@initech.test")

    assert refused.status_code == 403
    assert "Verify your email address with the link we sent" in visible_text(refused)
    assert form.status_code == 200
    assert f'name="token" value="{token}"' in html(form)
    assert verified.status_code == 302
    assert User.objects.get().email_verified
    assert accepted.status_code == 302
    assert signed_in_as(pages) == "new@initech.test"


def test_registering_with_verification_on_signs_in_only_after_the_link(
    pages, db, outbox, verification_on
):
    response = pages.post(
        "/register",
        {"email": "new@initech.test", "password": PASSWORD, "organization_name": "Initech"},
    )

    assert response.status_code == 302
    assert response["Location"] == "/login"
    assert "_auth_user_id" not in pages.session
    assert pages.get("/").status_code == 302
    assert mailed_token(outbox[0], "/verify-email")


def test_a_bad_verification_token_is_a_400(pages, db, verification_on):
    response = pages.post("/verify-email", {"token": "forged"})

    assert response.status_code == 400
    assert "This link is invalid, expired or already used." in visible_text(response)


def test_a_wrong_password_is_still_a_401_for_unverified_accounts(
    pages, make_pages, db, outbox, verification_on
):
    make_pages().post(
        "/register",
        {"email": "new@initech.test", "password": PASSWORD, "organization_name": "Initech"},
    )

    assert sign_in(pages, "new@initech.test", "not-the-password-1").status_code == 401


# --- Account: change the password ---------------------------------------------------------------


def test_change_password_keeps_this_session_and_ends_the_others(pages, make_pages, api, cast):
    pages.as_user(cast.admin)
    other = make_pages().as_user(cast.admin)
    jwt = api_login(api, "admin@acme.test").json()["token"]

    response = pages.post("/account", {"current_password": PASSWORD, "new_password": NEW_PASSWORD})

    assert response.status_code == 302
    assert response["Location"] == "/account"
    assert signed_in_as(pages) == "admin@acme.test"
    assert signed_in_as(other) is None
    assert api_me(api, jwt).status_code == 401
    assert api_login(api, "admin@acme.test", NEW_PASSWORD).status_code == 200


def test_change_password_needs_the_current_password(pages, cast):
    pages.as_user(cast.admin)

    response = pages.post(
        "/account", {"current_password": "not-my-password", "new_password": NEW_PASSWORD}
    )

    assert response.status_code == 400
    assert "The current password is incorrect." in visible_text(response)
    assert User.objects.get(pk=cast.admin.pk).check_password(PASSWORD)


def test_change_password_enforces_the_password_rules(pages, cast):
    pages.as_user(cast.admin)

    response = pages.post("/account", {"current_password": PASSWORD, "new_password": "1234567"})

    assert response.status_code == 400
    assert "This password is too short." in visible_text(response)
    assert User.objects.get(pk=cast.admin.pk).check_password(PASSWORD)


def test_the_account_page_needs_a_session(pages, cast):
    response = pages.post("/account", {"current_password": PASSWORD, "new_password": NEW_PASSWORD})

    assert response.status_code == 302
    assert response["Location"].startswith("/login")

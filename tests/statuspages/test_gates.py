"""Who may read a status page: public, private (members only, the unknown slug's 404 to
everyone else) and password pages (unlocked per browser session, throttled)."""

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.hashers import make_password
from django.test import Client

from accounts.models import Project, User
from statuspages.cache import page_cache_bump
from statuspages.gates import UNLOCKED_SESSION_KEY
from statuspages.models import Component, Section, StatusPage, Visibility
from tests.conftest import Cast

pytestmark = pytest.mark.django_db
PAGE_PASSWORD = "correct horse battery"
# Headers that differ between any two answers (the request id), not between pages.
VARYING = {"x-request-id"}


@pytest.fixture
def make_page(cast: Cast) -> Callable[..., StatusPage]:
    def make(slug: str, visibility: str = Visibility.PUBLIC, **fields: Any) -> StatusPage:
        if visibility == Visibility.PASSWORD:
            fields.setdefault("password_hash", make_password(PAGE_PASSWORD))
        fields.setdefault("organization", cast.org)
        return StatusPage.objects.create(
            name=f"{slug} status", slug=slug, visibility=visibility, **fields
        )

    return make


def signed_in(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _same_answer(first: Any, second: Any) -> None:
    """Two 404s a reader cannot tell apart: status, headers and body (a signed-in reader's
    CSRF token, masked anew on every render, aside)."""
    assert first.status_code == second.status_code == 404
    headers = [
        {k.lower(): v for k, v in r.headers.items() if k.lower() not in VARYING}
        for r in (first, second)
    ]
    assert headers[0] == headers[1]
    bodies = [
        re.sub(rb'name="csrfmiddlewaretoken" value="[^"]+"', b"", r.content)
        for r in (first, second)
    ]
    assert bodies[0] == bodies[1]


# --- private pages -----------------------------------------------------------------------


@pytest.mark.parametrize("reader", ["anonymous", "outsider"])
def test_private_page_answers_as_an_unknown_slug(
    cast: Cast, make_page: Callable[..., StatusPage], reader: str
) -> None:
    make_page("secret-page", Visibility.PRIVATE)
    client = signed_in(cast.outsider if reader == "outsider" else None)
    _same_answer(client.get("/status/no-such-page"), client.get("/status/secret-page"))
    _same_answer(
        client.get("/status/no-such-page/summary.json"),
        client.get("/status/secret-page/summary.json"),
    )
    _same_answer(
        client.get("/status/no-such-page/unlock"), client.get("/status/secret-page/unlock")
    )


@pytest.mark.parametrize("role", ["owner", "admin", "member"])
def test_members_of_any_role_read_a_private_page(
    cast: Cast, make_page: Callable[..., StatusPage], role: str
) -> None:
    make_page("secret-page", Visibility.PRIVATE)
    client = signed_in(getattr(cast, role))
    response = client.get("/status/secret-page")
    assert response.status_code == 200
    assert b"secret-page status" in response.content
    assert client.get("/status/secret-page/summary.json").status_code == 200


def test_a_member_reads_a_private_page_only_when_every_endpoint_on_it_is_theirs(
    cast: Cast, make_page: Callable[..., StatusPage], make_endpoint: Callable[..., Any]
) -> None:
    payroll = Project.objects.create(organization=cast.org, name="Payroll")
    mine = make_page("inside", Visibility.PRIVATE)
    section = Section.objects.create(page=mine, name="Core")
    site = make_endpoint(cast.project, name="Website")
    Component.objects.create(page=mine, section=section, endpoint=site)
    member, admin = signed_in(cast.member), signed_in(cast.admin)
    assert member.get("/status/inside").status_code == 200

    db = make_endpoint(payroll, name="payroll-db-primary")
    Component.objects.create(page=mine, section=section, endpoint=db, position=1)
    page_cache_bump(mine.pk)
    hidden = member.get("/status/inside")
    assert hidden.status_code == 404  # as for a page of another organization
    assert b"payroll-db-primary" not in hidden.content
    assert admin.get("/status/inside").status_code == 200  # managers see every project


def test_private_page_is_hidden_from_another_org_and_anonymous(
    cast: Cast, make_page: Callable[..., StatusPage]
) -> None:
    make_page("secret-page", Visibility.PRIVATE)
    assert signed_in(cast.outsider).get("/status/secret-page").status_code == 404
    assert signed_in(None).get("/status/secret-page").status_code == 404
    # the same people read a public page of the organization
    make_page("open-page")
    assert signed_in(None).get("/status/open-page").status_code == 200


def test_inactive_member_does_not_read_a_private_page(
    cast: Cast, make_page: Callable[..., StatusPage]
) -> None:
    make_page("secret-page", Visibility.PRIVATE)
    client = signed_in(cast.member)
    User.objects.filter(pk=cast.member.pk).update(is_active=False)
    assert client.get("/status/secret-page").status_code == 404


# --- password pages ----------------------------------------------------------------------


def test_locked_password_page_redirects_to_its_unlock_form(
    make_page: Callable[..., StatusPage],
) -> None:
    make_page("pw-page", Visibility.PASSWORD)
    response = Client().get("/status/pw-page")
    assert response.status_code == 302
    assert response["Location"] == "/status/pw-page/unlock?next=%2Fstatus%2Fpw-page"


def test_locked_password_page_data_routes_answer_403_revealing_nothing(
    make_page: Callable[..., StatusPage],
) -> None:
    make_page("pw-page", Visibility.PASSWORD)
    response = Client().get("/status/pw-page/summary.json")
    assert response.status_code == 403
    assert b"pw-page" not in response.content
    assert response["Cache-Control"] == "private, no-store"


def test_unlock_form_shows_only_the_title(make_page: Callable[..., StatusPage]) -> None:
    make_page("pw-page", Visibility.PASSWORD, title="Acme services", description="internal-detail")
    response = Client().get("/status/pw-page/unlock?next=/status/pw-page")
    assert response.status_code == 200
    body = response.content.decode()
    assert "Acme services" in body
    assert "internal-detail" not in body
    assert 'name="csrfmiddlewaretoken"' in body
    assert 'type="password"' in body
    assert response["Cache-Control"] == "private, no-store"


def test_wrong_password_shows_an_error_and_stays_locked(
    make_page: Callable[..., StatusPage],
) -> None:
    make_page("pw-page", Visibility.PASSWORD)
    client = Client()
    response = client.post("/status/pw-page/unlock", {"password": "guess"})
    assert response.status_code == 400
    assert b"That password is not right." in response.content
    assert client.get("/status/pw-page").status_code == 302


def test_right_password_unlocks_this_browser_session_only(
    make_page: Callable[..., StatusPage],
) -> None:
    make_page("pw-page", Visibility.PASSWORD)
    make_page("other-pw-page", Visibility.PASSWORD)
    client = Client()
    response = client.post(
        "/status/pw-page/unlock", {"password": PAGE_PASSWORD, "next": "/status/pw-page"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/status/pw-page"
    # the session cookie ends with the browser
    assert response.cookies["sessionid"]["max-age"] == ""
    assert response.cookies["sessionid"]["expires"] == ""
    assert client.get("/status/pw-page").status_code == 200
    assert client.get("/status/pw-page/summary.json").status_code == 200
    # another browser, and another page in this one, are still locked
    assert Client().get("/status/pw-page").status_code == 302
    assert client.get("/status/other-pw-page").status_code == 302
    # an unlocked page's form sends the reader on
    assert client.get("/status/pw-page/unlock").status_code == 302


def test_changing_the_password_locks_earlier_unlocks(
    make_page: Callable[..., StatusPage],
) -> None:
    page = make_page("pw-page", Visibility.PASSWORD)
    client = Client()
    client.post("/status/pw-page/unlock", {"password": PAGE_PASSWORD})
    assert client.get("/status/pw-page").status_code == 200
    # even set to the same words again: a new salt, a new hash
    page.password_hash = make_password(PAGE_PASSWORD)
    page.save()
    page_cache_bump(page.pk)  # what the page's editor does after saving
    assert client.get("/status/pw-page").status_code == 302
    assert client.post("/status/pw-page/unlock", {"password": PAGE_PASSWORD}).status_code == 302
    assert client.get("/status/pw-page").status_code == 200


def test_a_forged_session_entry_does_not_unlock(make_page: Callable[..., StatusPage]) -> None:
    page = make_page("pw-page", Visibility.PASSWORD)
    client = Client()
    session = client.session
    session[UNLOCKED_SESSION_KEY] = {str(page.pk): "0" * 32}
    session.save()
    assert client.get("/status/pw-page").status_code == 302


def test_members_read_a_password_page_without_its_password(
    cast: Cast, make_page: Callable[..., StatusPage]
) -> None:
    make_page("pw-page", Visibility.PASSWORD)
    assert signed_in(cast.member).get("/status/pw-page").status_code == 200
    assert signed_in(cast.outsider).get("/status/pw-page").status_code == 302


def test_unlock_goes_back_only_to_a_path_of_this_site(
    make_page: Callable[..., StatusPage],
) -> None:
    make_page("pw-page", Visibility.PASSWORD)
    for target in ("https://evil.example/", "//evil.example/x"):
        response = Client().post(
            "/status/pw-page/unlock", {"password": PAGE_PASSWORD, "next": target}
        )
        assert response["Location"] == "/status/pw-page"


def test_a_public_page_has_nothing_to_unlock(make_page: Callable[..., StatusPage]) -> None:
    make_page("open-page")
    response = Client().get("/status/open-page/unlock")
    assert response.status_code == 302
    assert response["Location"] == "/status/open-page"


def test_page_without_a_password_set_never_unlocks(
    make_page: Callable[..., StatusPage],
) -> None:
    make_page("pw-page", Visibility.PASSWORD, password_hash="")
    assert Client().post("/status/pw-page/unlock", {"password": ""}).status_code == 400


def test_unlock_form_needs_its_csrf_token(make_page: Callable[..., StatusPage]) -> None:
    make_page("pw-page", Visibility.PASSWORD)
    client = Client(enforce_csrf_checks=True)
    assert client.post("/status/pw-page/unlock", {"password": PAGE_PASSWORD}).status_code == 403
    form = client.get("/status/pw-page/unlock")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.content.decode())
    assert token is not None
    response = client.post(
        "/status/pw-page/unlock",
        {"password": PAGE_PASSWORD, "csrfmiddlewaretoken": token.group(1)},
    )
    assert response.status_code == 302


# --- throttling --------------------------------------------------------------------------


def test_unlock_attempts_are_throttled_per_client_address(
    settings: Any, make_page: Callable[..., StatusPage]
) -> None:
    settings.STATUS_PAGE_UNLOCK_ATTEMPTS_PER_IP = 3
    make_page("pw-page", Visibility.PASSWORD)
    make_page("other-pw-page", Visibility.PASSWORD)
    client = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(3):
        assert client.post("/status/pw-page/unlock", {"password": "guess"}).status_code == 400
    throttled = client.post("/status/pw-page/unlock", {"password": PAGE_PASSWORD})
    assert throttled.status_code == 429
    assert 0 < int(throttled["Retry-After"]) <= settings.STATUS_PAGE_UNLOCK_WINDOW_SECONDS + 1
    assert b"Too many attempts" in throttled.content
    assert client.get("/status/pw-page").status_code == 302  # the right password did not count
    # the address is over its limit on every page; another address is not
    other_page = client.post("/status/other-pw-page/unlock", {"password": PAGE_PASSWORD})
    assert other_page.status_code == 429
    other = Client(REMOTE_ADDR="203.0.113.8")
    assert other.post("/status/pw-page/unlock", {"password": PAGE_PASSWORD}).status_code == 302


def test_an_ipv6_client_is_counted_by_its_slash_64(
    settings: Any, make_page: Callable[..., StatusPage]
) -> None:
    """One host usually holds a whole /64: new addresses in it are no fresh budget."""
    settings.STATUS_PAGE_UNLOCK_ATTEMPTS_PER_IP = 3
    make_page("pw-page", Visibility.PASSWORD)
    for n in range(3):
        client = Client(REMOTE_ADDR=f"2001:db8:1:2::{n + 1:x}")
        assert client.post("/status/pw-page/unlock", {"password": "guess"}).status_code == 400
    same_64 = Client(REMOTE_ADDR="2001:db8:1:2:ffff::9")
    assert same_64.post("/status/pw-page/unlock", {"password": "guess"}).status_code == 429
    other_64 = Client(REMOTE_ADDR="2001:db8:1:3::1")
    assert other_64.post("/status/pw-page/unlock", {"password": "guess"}).status_code == 400


def test_unlock_attempts_are_throttled_per_page(
    settings: Any, make_page: Callable[..., StatusPage]
) -> None:
    settings.STATUS_PAGE_UNLOCK_ATTEMPTS_PER_PAGE = 2
    make_page("pw-page", Visibility.PASSWORD)
    make_page("other-pw-page", Visibility.PASSWORD)
    for n in range(2):
        client = Client(REMOTE_ADDR=f"198.51.100.{n}")
        assert client.post("/status/pw-page/unlock", {"password": "guess"}).status_code == 400
    late = Client(REMOTE_ADDR="198.51.100.99")
    assert late.post("/status/pw-page/unlock", {"password": PAGE_PASSWORD}).status_code == 429
    assert late.post("/status/other-pw-page/unlock", {"password": "x"}).status_code == 400


def test_public_page_answer_does_not_vary_by_cookie(
    make_page: Callable[..., StatusPage],
) -> None:
    """Shared caches may keep a public page: the gate reads no session for it."""
    make_page("open-page")
    response = Client().get("/status/open-page/summary.json")
    assert response.status_code == 200
    assert "Cookie" not in response.get("Vary", "")

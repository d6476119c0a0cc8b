"""Security headers on every page, cookies, and hostile strings (names people type, texts
remote servers send back) shown only escaped. No page runs inline script."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Organization, Project
from alerts.services import channel_create
from apikeys.services import api_key_create
from monitoring.models import Incident
from tests.helpers import PASSWORD
from tests.web.conftest import Markup, html

# Every kind of page, with `{endpoint}` for an endpoint the viewer may see.
SIGNED_IN = [
    "/",
    "/?period=7d",
    "/?period=30d",
    "/endpoints/{endpoint}",
    "/endpoints/{endpoint}?period=7d",
    "/endpoints/{endpoint}?period=30d",
    "/endpoints/{endpoint}/edit",
    "/endpoints/new",
    "/compare",
    "/compare?endpoints={endpoint}",
    "/team",
    "/projects",
    "/api-keys",
    "/account",
    "/alerts",
]
ANONYMOUS = [
    "/login",
    "/login?next=/team",
    "/register",
    "/forgot-password",
    "/reset-password?token=abc",
    "/accept-invite?token=abc",
    "/verify-email?token=abc",
    "/no-such-page",
]


def csp(response):
    """The Content-Security-Policy as {directive: [sources]}."""
    header = response["Content-Security-Policy"]
    found = {}
    for part in header.split(";"):
        name, *sources = part.split()
        found[name] = sources
    return found


def assert_security_headers(response, url):
    policy = csp(response)
    assert policy["script-src"] == ["'self'"], url
    assert policy["default-src"] == ["'self'"], url
    assert policy["frame-ancestors"] == ["'none'"], url
    assert policy["object-src"] == ["'none'"], url
    assert policy["base-uri"] == ["'self'"], url
    for sources in policy.values():
        assert "'unsafe-eval'" not in sources, url
    assert "'unsafe-inline'" not in policy["script-src"] + policy["default-src"], url
    assert response["X-Content-Type-Options"] == "nosniff", url
    assert response["Referrer-Policy"] in ("same-origin", "strict-origin", "no-referrer"), url
    assert response["X-Frame-Options"] == "DENY", url


def assert_no_inline_script(response, url):
    """No inline <script>, no on<event>= attribute, no javascript: URL."""
    markup = Markup(html(response))
    for tag, attrs in markup.tags:
        if tag == "script":
            assert attrs.get("src"), (url, attrs)
        for name, value in attrs.items():
            assert not name.lower().startswith("on"), (url, tag, name)
            assert not (value or "").strip().lower().startswith("javascript:"), (url, tag, name)
    assert not "".join(markup.script_bodies).strip(), url


@pytest.fixture
def endpoint(cast, make_endpoint, record):
    made = make_endpoint(cast.project, name="Website")
    soon = timezone.now() + timedelta(seconds=1)
    record(made, [(soon + timedelta(minutes=m), m % 3 != 0, 50.0 + m) for m in range(6)])
    return made


def signed_in_urls(endpoint):
    return [url.format(endpoint=endpoint.pk) for url in SIGNED_IN]


# --- Headers -----------------------------------------------------------------------------------


def test_every_signed_in_page_sends_the_security_headers(pages, cast, endpoint):
    pages.as_user(cast.owner)
    for url in signed_in_urls(endpoint):
        response = pages.get(url)
        assert response.status_code == 200, url
        assert_security_headers(response, url)


@pytest.mark.parametrize("url", ANONYMOUS)
def test_every_anonymous_page_sends_the_security_headers(pages, cast, url):
    response = pages.get(url)

    assert response.status_code in (200, 400, 404)
    assert_security_headers(response, url)


def test_redirects_errors_and_form_answers_send_them_too(pages, cast, endpoint):
    answers = {
        "redirect to login": pages.get("/"),
        "login failure": pages.post("/login", {"email": "x@y.test", "password": "nope-nope-1"}),
        "405": pages.get("/logout"),
    }
    pages.as_user(cast.member)
    answers["403"] = pages.get("/team")
    answers["404"] = pages.get("/endpoints/00000000-0000-0000-0000-000000000000")
    answers["400 form"] = pages.post("/projects/new", {"name": ""}, follow=False)
    answers["key shown"] = pages.post("/api-keys/new", {"name": "k", "scopes": ["admin"]})
    answers["compare 400"] = pages.get("/compare?" + "&".join(["endpoints=x"] * 11))
    for what, response in answers.items():
        assert_security_headers(response, what)


def test_hsts_on_secure_requests(pages, cast):
    pages.as_user(cast.member)

    secure = pages.get("/", secure=True)
    anonymous = pages.as_user(None).get("/login", secure=True)
    plain = pages.get("/login")

    for response in (secure, anonymous):
        hsts = response["Strict-Transport-Security"]
        assert hsts.startswith("max-age=")
        assert int(hsts.split("max-age=")[1].split(";")[0]) >= 15_552_000  # half a year at least
        assert "includeSubDomains" in hsts
    assert "Strict-Transport-Security" not in plain


def test_the_session_and_csrf_cookies_are_secure(pages, cast):
    pages.get("/login")
    csrf_cookie = pages.cookies["csrftoken"]

    pages.post("/login", {"email": "owner@acme.test", "password": PASSWORD}, secure=True)

    session = pages.cookies["sessionid"]
    assert session["secure"] is True
    assert session["httponly"] is True
    assert session["samesite"] == "Lax"
    assert csrf_cookie["secure"] is True


def test_the_session_id_changes_at_login(pages, cast):
    pages.get("/login")
    pages.cookies["sessionid"] = "attacker-chosen-session-id"

    pages.post("/login", {"email": "owner@acme.test", "password": PASSWORD})

    assert pages.cookies["sessionid"].value != "attacker-chosen-session-id"


# --- No inline script ----------------------------------------------------------------------------


def test_no_signed_in_page_has_inline_script(pages, cast, endpoint):
    pages.as_user(cast.owner)
    for url in [*signed_in_urls(endpoint), "/api/docs/"]:
        response = pages.get(url)
        assert response.status_code == 200, url
        assert_no_inline_script(response, url)


@pytest.mark.parametrize("url", ANONYMOUS)
def test_no_anonymous_page_has_inline_script(pages, cast, url):
    assert_no_inline_script(pages.get(url), url)


def test_the_site_script_is_served_from_self(pages, cast):
    markup = Markup(html(pages.get("/login")))

    sources = [attrs["src"] for attrs in markup.find("script")]
    assert sources
    assert all(src.startswith("/static/") for src in sources)
    for src in sources:
        response = pages.get(src)
        assert response.status_code == 200
        assert b"document" in b"".join(response.streaming_content)
        response.close()


# --- Hostile strings ---------------------------------------------------------------------------

ENDPOINT_NAME = "<img src=x onerror=alert(1)>"
PROJECT_NAME = "<script>alert(2)</script>"
ORG_NAME = "<script>alert(2)</script> Inc"
ERROR = "<script>alert(3)</script>"
DETAIL = '"><script>alert(4)</script>'
CAUSE_START = "<svg onload=alert(5)>"
KEY_NAME = "<b onmouseover=alert(6)>key</b>"
CHANNEL_NAME = "<i onclick=alert(15)>hook</i>"
HOSTILE = [
    ENDPOINT_NAME,
    PROJECT_NAME,
    ERROR,
    DETAIL,
    CAUSE_START,
    KEY_NAME,
    CHANNEL_NAME,
    "alert(2)</script>",
]


def escaped(text):
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


@pytest.fixture
def hostile(cast, make_endpoint, record_observed, invitation):
    """Every string a user or a probed server controls, made hostile."""
    Organization.objects.filter(pk=cast.org.pk).update(name=ORG_NAME)
    project = Project.objects.create(organization=cast.org, name=PROJECT_NAME)
    endpoint = make_endpoint(project, name=ENDPOINT_NAME)
    soon = timezone.now() + timedelta(seconds=1)
    record_observed(
        endpoint,
        [
            (soon, False, 12.0, CAUSE_START, DETAIL),
            (soon + timedelta(minutes=1), False, 13.0, ERROR, DETAIL),
            (soon + timedelta(minutes=2), False, 14.0, ERROR, DETAIL),
        ],
    )
    assert Incident.objects.get(endpoint=endpoint).cause == CAUSE_START
    api_key_create(creator=cast.owner, name=KEY_NAME, scopes=["admin"], expires_at=None)
    channel_create(
        organization=cast.org,
        name=CHANNEL_NAME,
        kind="email",
        config={"addresses": ["ops@acme.test"], "to_members": True},
        endpoints=[endpoint],
    )
    return endpoint


def hostile_pages(endpoint):
    pk = endpoint.pk
    return {
        "/": [ENDPOINT_NAME, PROJECT_NAME, CAUSE_START, ORG_NAME],
        "/?period=7d": [ENDPOINT_NAME, PROJECT_NAME],
        "/?period=30d": [ENDPOINT_NAME, PROJECT_NAME],
        f"/endpoints/{pk}": [ENDPOINT_NAME, PROJECT_NAME, ERROR, DETAIL, CAUSE_START],
        f"/endpoints/{pk}?period=7d": [ENDPOINT_NAME, ERROR, DETAIL, CAUSE_START],
        f"/endpoints/{pk}?period=30d": [ENDPOINT_NAME, ERROR, DETAIL, CAUSE_START],
        f"/compare?endpoints={pk}": [ENDPOINT_NAME, PROJECT_NAME],
        "/compare": [ENDPOINT_NAME, PROJECT_NAME],
        "/projects": [PROJECT_NAME],
        "/team": [PROJECT_NAME, ORG_NAME],
        f"/endpoints/{pk}/edit": [ENDPOINT_NAME, PROJECT_NAME],
        "/endpoints/new": [PROJECT_NAME],
        "/api-keys": [KEY_NAME],
        "/account": [ORG_NAME],
        "/alerts": [CHANNEL_NAME, ENDPOINT_NAME, PROJECT_NAME],
    }


def test_hostile_strings_appear_only_escaped(pages, cast, hostile):
    pages.as_user(cast.owner)
    for url, shown in hostile_pages(hostile).items():
        response = pages.get(url)
        source = html(response)
        assert response.status_code == 200, url
        for text in HOSTILE:
            assert text not in source, (url, text)
        for text in shown:
            assert escaped(text) in source, (url, text)
        assert_no_inline_script(response, url)


def test_hostile_strings_in_messages_and_form_errors_are_escaped(pages, cast, hostile):
    pages.as_user(cast.owner)

    created = pages.post(
        "/endpoints/new",
        {
            "project": str(cast.project.pk),
            "name": "<script>alert(8)</script>",
            "type": "http",
            "target": "https://example.test/",
            "enabled": "true",
        },
    )
    message_page = pages.get(created["Location"])
    refused = pages.post(
        "/endpoints/new",
        {
            "project": '"><script>alert(9)</script>',
            "name": '"><script>alert(10)</script>',
            "type": "<script>alert(11)</script>",
            "target": "<script>alert(12)</script>",
        },
    )
    paused = pages.get(pages.post(f"/endpoints/{hostile.pk}/pause")["Location"])

    for response in (message_page, refused, paused):
        source = html(response)
        assert "<script>alert(" not in source
        assert_no_inline_script(response, "message")
    assert escaped("<script>alert(8)</script> is monitored now.") in html(message_page)
    assert escaped('"><script>alert(10)</script>') in html(refused)


def test_hostile_query_strings_are_escaped(pages, cast, hostile):
    pages.as_user(cast.owner)
    attack = '"><script>alert(13)</script>'
    for url in [
        f"/?period={attack}&status={attack}&type={attack}&project={attack}",
        f"/endpoints/{hostile.pk}?period={attack}",
        f"/compare?period={attack}",
        f"/login?next={attack}",
    ]:
        response = pages.get(url)
        assert response.status_code in (200, 302), url
        assert "<script>alert(13)" not in html(response), url


def test_hostile_login_email_is_escaped(pages, cast):
    response = pages.post("/login", {"email": '"><script>alert(14)</script>', "password": "x"})

    assert response.status_code == 400
    assert "<script>alert(14)" not in html(response)
    assert escaped('"><script>alert(14)</script>') in html(response)

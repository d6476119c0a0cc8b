"""Custom domains: a registered page's domain serves that page's public routes at its root and
nothing else of the app; every other unknown Host is still refused."""

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.hashers import make_password
from django.test import Client

from statuspages import validation
from statuspages.middleware import domain_cache_forget
from statuspages.models import StatusPage, Subscriber, Visibility
from tests.conftest import Cast
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db
DOMAIN = "status.example.com"
PAGE_PASSWORD = "correct horse battery"


@pytest.fixture
def make_page(cast: Cast) -> Callable[..., StatusPage]:
    def make(slug: str, visibility: str = Visibility.PUBLIC, **fields: Any) -> StatusPage:
        if visibility == Visibility.PASSWORD:
            fields.setdefault("password_hash", make_password(PAGE_PASSWORD))
        return StatusPage.objects.create(
            organization=cast.org,
            name=f"{slug} status",
            slug=slug,
            visibility=visibility,
            **fields,
        )

    return make


def on(host: str, **extra: Any) -> Client:
    return Client(HTTP_HOST=host, **extra)


def test_custom_domain_serves_its_page_at_the_root(make_page: Callable[..., StatusPage]) -> None:
    make_page("acme", custom_domain=DOMAIN)
    make_page("globex", custom_domain="status.globex.test")
    response = on(DOMAIN).get("/")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    html = response.content.decode()
    assert "<h1>acme status</h1>" in html
    for link in ("/summary.json", "/history.atom", "/history.rss"):
        assert f'href="{link}"' in html, link  # links at the domain's root
    summary = on(DOMAIN).get("/summary.json")
    assert summary["Content-Type"] == "application/json"
    assert summary.json()["page"]["name"] == "acme status"
    assert summary.json()["page"]["url"] == f"https://{DOMAIN}/"
    atom = on(DOMAIN).get("/history.atom")
    assert atom["Content-Type"].startswith("application/atom+xml")
    assert "acme status" in atom.content.decode()
    rss = on(DOMAIN).get("/history.rss")
    assert rss["Content-Type"].startswith("application/rss+xml")
    assert "acme status" in rss.content.decode()
    globex = on("status.globex.test").get("/").content.decode()
    assert "<h1>globex status</h1>" in globex
    assert "acme status" not in globex


def test_custom_domain_host_is_matched_without_case_port_or_trailing_dot(
    make_page: Callable[..., StatusPage],
) -> None:
    make_page("acme", custom_domain=DOMAIN)
    for host in ("Status.Example.COM", f"{DOMAIN}:8443", f"{DOMAIN}."):
        assert on(host).get("/").status_code == 200, host


def test_unknown_host_is_still_refused(make_page: Callable[..., StatusPage]) -> None:
    make_page("acme", custom_domain=DOMAIN)
    assert on("evil.example").get("/").status_code == 400
    assert on("evil.example").get("/status/acme/unlock").status_code == 400
    assert on("bad host!").get("/").status_code == 400
    assert on("status.example.com.evil.test").get("/").status_code == 400


@pytest.mark.parametrize(
    "path",
    [
        "/admin/",
        "/admin/login/",
        "/api/v1/health",
        "/api/v1/status-pages",
        "/api/docs/",
        "/login",
        "/status/acme",
        "/status/acme/unlock",
        "/status-domains/check?domain=status.example.com",
        "/metrics",
        "/healthz",
    ],
)
def test_custom_domain_does_not_expose_the_app(
    make_page: Callable[..., StatusPage], path: str
) -> None:
    make_page("acme", custom_domain=DOMAIN)
    response = on(DOMAIN).get(path)
    assert response.status_code == 404
    assert b"healthmon" not in response.content


def test_app_host_is_unchanged(make_page: Callable[..., StatusPage]) -> None:
    make_page("acme", Visibility.PASSWORD, custom_domain=DOMAIN)
    client = Client()  # testserver, in ALLOWED_HOSTS
    assert client.get("/status/acme/unlock").status_code == 200
    assert client.get("/healthz").status_code == 200
    assert client.get("/unlock").status_code == 404  # the domain's routes are not the app's


def test_password_page_on_its_domain_unlocks_at_the_root(
    make_page: Callable[..., StatusPage],
) -> None:
    make_page("acme", Visibility.PASSWORD, custom_domain=DOMAIN)
    client = on(DOMAIN)
    locked = client.get("/")
    assert locked.status_code == 302
    assert locked["Location"] == "/unlock?next=%2F"
    assert client.get("/summary.json").status_code == 403
    assert client.post("/unlock", {"password": "guess"}).status_code == 400
    unlocked = client.post("/unlock", {"password": PAGE_PASSWORD, "next": "/"})
    assert unlocked.status_code == 302
    assert unlocked["Location"] == "/"
    assert client.get("/").status_code == 200
    assert on(DOMAIN).get("/").status_code == 302  # another browser


def test_unlock_on_a_domain_checks_csrf_against_that_domain(
    settings: Any, make_page: Callable[..., StatusPage]
) -> None:
    """CSRF's origin check reads request.get_host(): the custom domain must pass it."""
    settings.SECURE_SSL_REDIRECT = False
    make_page("acme", Visibility.PASSWORD, custom_domain=DOMAIN)
    client = on(DOMAIN, enforce_csrf_checks=True)
    form = client.get("/unlock", secure=True)
    token = form.context["csrf_token"]
    origin = {"HTTP_ORIGIN": f"https://{DOMAIN}", "secure": True}
    response = client.post(
        "/unlock", {"password": PAGE_PASSWORD, "csrfmiddlewaretoken": token}, **origin
    )
    assert response.status_code == 302
    forged = {"HTTP_ORIGIN": "https://evil.example", "secure": True}
    assert client.post("/unlock", {"csrfmiddlewaretoken": token}, **forged).status_code == 403


def test_private_page_on_its_domain_is_the_same_404(make_page: Callable[..., StatusPage]) -> None:
    make_page("acme", Visibility.PRIVATE, custom_domain=DOMAIN)
    private = on(DOMAIN).get("/")
    missing = on(DOMAIN).get("/no-such-route")
    assert private.status_code == missing.status_code == 404
    assert private.content == missing.content


def test_unknown_host_answer_is_cached(
    make_page: Callable[..., StatusPage], django_assert_num_queries: Any
) -> None:
    make_page("acme", custom_domain=DOMAIN)
    with django_assert_num_queries(1):
        assert on("unknown.example").get("/").status_code == 400
    with django_assert_num_queries(0):
        assert on("unknown.example").get("/").status_code == 400
        assert on("unknown.example").get("/status/acme").status_code == 400


def test_registered_domain_answer_is_cached_and_can_be_forgotten(
    make_page: Callable[..., StatusPage], django_assert_num_queries: Any
) -> None:
    page = make_page("acme", custom_domain=DOMAIN)
    on(DOMAIN).get("/favicon.ico")
    with django_assert_num_queries(0):
        assert on(DOMAIN).get("/favicon.ico").status_code == 200
    page.custom_domain = None
    page.save()
    domain_cache_forget(DOMAIN)
    assert on(DOMAIN).get("/favicon.ico").status_code == 400


def test_tls_ask_endpoint_answers_only_for_registered_domains(
    make_page: Callable[..., StatusPage],
) -> None:
    make_page("acme", custom_domain=DOMAIN)
    client = Client()
    assert client.get("/status-domains/check", {"domain": DOMAIN}).status_code == 200
    assert client.get("/status-domains/check", {"domain": "STATUS.example.com"}).status_code == 200
    for bad in ("unknown.example", "", "bad host!", "x" * 300):
        assert client.get("/status-domains/check", {"domain": bad}).status_code == 404
    assert client.get("/status-domains/check").status_code == 404
    assert client.post("/status-domains/check", {"domain": DOMAIN}).status_code == 405


def test_real_public_views_serve_the_domain(make_page: Callable[..., StatusPage]) -> None:
    make_page("acme", custom_domain=DOMAIN)
    page = on(DOMAIN).get("/")
    assert page.status_code == 200
    assert b"acme status" in page.content
    assert b"/status/acme" not in page.content  # links stay on the domain
    summary = on(DOMAIN).get("/summary.json")
    assert summary.status_code == 200
    assert summary.json()["page"]["name"] == "acme status"
    for feed in ("/history.atom", "/history.rss"):
        assert on(DOMAIN).get(feed).status_code == 200


def test_subscribing_on_the_domain_stays_on_the_domain(
    make_page: Callable[..., StatusPage], outbox: list[Any]
) -> None:
    make_page("acme", custom_domain=DOMAIN)
    reader = on(DOMAIN)

    refused = reader.post("/subscribe", {"email": "not an address"})
    sent = reader.post("/subscribe", {"email": "reader@example.net"})
    token = Subscriber.objects.get().token
    confirm = reader.get(f"/confirm/{token}")
    unsubscribe = reader.get(f"/unsubscribe/{token}")

    assert (refused.status_code, sent.status_code) == (400, 200)
    assert (confirm.status_code, unsubscribe.status_code) == (200, 200)
    for answer in (refused, sent, confirm, unsubscribe):
        html = answer.content.decode()
        assert "/status/acme" not in html  # every link and form stays on the domain
        assert "/login" not in html  # and none of the app's navigation
    assert 'action="/subscribe"' in refused.content.decode()
    assert reader.post(f"/confirm/{token}").status_code == 200
    assert Subscriber.objects.get().confirmed_at is not None


def test_tls_ask_endpoint_answers_plain_http(
    settings: Any, make_page: Callable[..., StatusPage]
) -> None:
    """The proxy asks over plain HTTP before it has a certificate: no HTTPS redirect."""
    settings.SECURE_SSL_REDIRECT = True
    make_page("acme", custom_domain=DOMAIN)
    client = Client()
    assert client.get("/status-domains/check", {"domain": DOMAIN}).status_code == 200
    assert client.get("/status/acme/unlock").status_code == 301  # the rest still redirects


@pytest.mark.parametrize("written", [DOMAIN, "Status.Example.COM.", " status.example.com "])
def test_a_domain_of_another_organizations_page_is_refused(
    api: Any, cast: Cast, written: str
) -> None:
    StatusPage.objects.create(
        organization=cast.other_org, name="Globex status", slug="globex", custom_domain=DOMAIN
    )
    owner = api.as_user(cast.owner)
    body = {"name": "Acme status", "slug": "acme", "visibility": "public"}

    created = owner.post("/api/v1/status-pages", {**body, "custom_domain": written}, format="json")

    problem = assert_problem(created, 400, "validation_error")
    assert problem["errors"] == {"custom_domain": [validation.DOMAIN_TAKEN]}
    assert "Globex" not in created.content.decode()  # who holds it is never said
    assert not StatusPage.objects.filter(organization=cast.org).exists()

    made = owner.post("/api/v1/status-pages", body, format="json")
    assert made.status_code == 201, made.content
    page_id = made.json()["id"]
    changed = owner.patch(
        f"/api/v1/status-pages/{page_id}", {"custom_domain": written}, format="json"
    )

    problem = assert_problem(changed, 400, "validation_error")
    assert problem["errors"] == {"custom_domain": [validation.DOMAIN_TAKEN]}
    assert StatusPage.objects.get(pk=page_id).custom_domain is None
    # The domain still serves the page that holds it.
    assert "<h1>Globex status</h1>" in on(DOMAIN).get("/").content.decode()


def test_a_domain_of_the_organizations_own_other_page_is_refused_too(
    api: Any, cast: Cast, make_page: Callable[..., StatusPage]
) -> None:
    make_page("acme", custom_domain=DOMAIN)
    created = api.as_user(cast.owner).post(
        "/api/v1/status-pages",
        {"name": "Second", "slug": "second", "visibility": "public", "custom_domain": DOMAIN},
        format="json",
    )

    problem = assert_problem(created, 400, "validation_error")
    assert problem["errors"] == {"custom_domain": [validation.DOMAIN_TAKEN]}

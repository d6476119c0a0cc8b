"""The public responses' cache: validators and 304s, freshness, invalidation, and one
render per stampede."""

import gzip
import threading
from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth.hashers import make_password
from django.test import RequestFactory
from django.utils import timezone

from monitoring.models import Endpoint
from statuspages import cache as page_cache
from statuspages.cache import Rendered, cached_response, page_cache_bump
from statuspages.models import Visibility
from tests.statuspages.pages import declare, make_page

ROUTES = ("", "/summary.json", "/history.atom", "/history.rss")


@pytest.fixture
def page(cast, make_endpoint):
    return make_page(cast.org, {"Core": [make_endpoint(cast.project, name="API")]})


@pytest.mark.parametrize("suffix", ROUTES)
def test_responses_carry_validators_and_public_caching(page, client, suffix):
    response = client.get("/status/acme" + suffix)
    assert response.status_code == 200
    assert response["ETag"].startswith('"')
    assert response["Last-Modified"]
    assert response["Cache-Control"] == f"public, max-age={page_cache.MAX_AGE}"


@pytest.mark.parametrize("suffix", ROUTES)
def test_a_reader_who_has_it_gets_304(page, client, suffix):
    first = client.get("/status/acme" + suffix)
    by_etag = client.get("/status/acme" + suffix, HTTP_IF_NONE_MATCH=first["ETag"])
    by_date = client.get("/status/acme" + suffix, HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])
    other = client.get("/status/acme" + suffix, HTTP_IF_NONE_MATCH='"something-else"')
    assert by_etag.status_code == 304
    assert by_etag.content == b""
    assert by_etag["ETag"] == first["ETag"]
    assert by_date.status_code == 304
    assert other.status_code == 200


def test_a_state_change_shows_within_ten_seconds(page, client):
    endpoint = Endpoint.objects.get()
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        first = client.get("/status/acme/summary.json")
        Endpoint.objects.filter(pk=endpoint.pk).update(status="down")
        clock.shift(timedelta(seconds=1))
        cached = client.get("/status/acme/summary.json")
        assert cached.json()["status"]["indicator"] == "none"  # served from the cache
        clock.shift(timedelta(seconds=page_cache.FRESH_SECONDS))
        fresh = client.get("/status/acme/summary.json")
    assert fresh.json()["status"]["indicator"] == "critical"
    assert fresh["ETag"] != first["ETag"]
    assert page_cache.FRESH_SECONDS + page_cache.MAX_AGE <= 10
    # A client holding the old copy now gets the new one, not a 304.
    again = client.get("/status/acme/summary.json", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 200


def test_a_bump_shows_an_update_at_once(page, client):
    endpoint = Endpoint.objects.get()
    with time_machine.travel(timezone.now(), tick=False):
        assert "Slow logins" not in client.get("/status/acme").content.decode()
        declare(page.organization, [endpoint], at=timezone.now())
        assert "Slow logins" not in client.get("/status/acme").content.decode()
        page_cache_bump(page.pk)
        assert "Slow logins" in client.get("/status/acme").content.decode()


def test_an_unchanged_body_keeps_its_last_modified(page, client):
    with time_machine.travel(timezone.now(), tick=False) as clock:
        first = client.get("/status/acme/history.atom")
        clock.shift(timedelta(seconds=60))
        page_cache_bump(page.pk)
        second = client.get("/status/acme/history.atom")
    assert second["ETag"] == first["ETag"]
    assert second["Last-Modified"] == first["Last-Modified"]


def test_pages_that_are_not_public_are_never_stored_by_others(page):
    page.visibility = Visibility.PASSWORD
    request = RequestFactory().get("/status/acme")
    response = cached_response(
        request, page=page, fmt="html", render=lambda: Rendered(b"hi", "text/plain")
    )
    assert response["Cache-Control"] == "private, no-store"


def test_a_stampede_on_a_stale_entry_renders_once(page):
    """While one reader renders, the others are served the stale entry at once."""
    renders, started, release = [], threading.Event(), threading.Event()

    def render():
        renders.append(1)
        if len(renders) > 1:
            started.set()
            release.wait(5)
        return Rendered(f"v{len(renders)}".encode(), "text/plain")

    def serve():
        request = RequestFactory().get("/status/acme")
        return cached_response(request, page=page, fmt="t", render=render).content

    assert serve() == b"v1"
    page_cache_bump(page.pk)  # stale now
    bodies: list[bytes] = []
    renderer = threading.Thread(target=lambda: bodies.append(serve()))
    renderer.start()
    assert started.wait(5)
    readers = [serve() for _ in range(20)]  # all while the render is under way
    release.set()
    renderer.join(5)
    assert readers == [b"v1"] * 20
    assert bodies == [b"v2"]
    assert len(renders) == 2
    assert serve() == b"v2"
    assert len(renders) == 2


def test_a_cold_stampede_waits_for_the_one_render(page, monkeypatch):
    """With nothing cached, readers wait for the lock holder's render, not render too."""
    renders, started, release = [], threading.Event(), threading.Event()

    def render():
        renders.append(1)
        started.set()
        release.wait(5)
        return Rendered(b"body", "text/plain")

    def serve(into):
        request = RequestFactory().get("/status/acme")
        into.append(cached_response(request, page=page, fmt="t", render=render).content)

    bodies: list[bytes] = []
    first = threading.Thread(target=serve, args=(bodies,))
    first.start()
    assert started.wait(5)
    waiters = [threading.Thread(target=serve, args=(bodies,)) for _ in range(5)]
    for waiter in waiters:
        waiter.start()
    release.set()
    for thread in (first, *waiters):
        thread.join(5)
    assert bodies == [b"body"] * 6
    assert len(renders) == 1


def test_a_password_page_is_cached_by_nobody_but_us(page, client):
    page.visibility = Visibility.PASSWORD
    page.password_hash = make_password("open sesame")
    page.save()
    assert client.get("/status/acme").status_code == 302  # to its unlock form
    assert client.get("/status/acme/summary.json").status_code == 403
    unlocked = client.post("/status/acme/unlock", {"password": "open sesame"})
    assert unlocked.status_code == 302
    for suffix in ROUTES:
        response = client.get("/status/acme" + suffix)
        assert response.status_code == 200, suffix
        assert response["Cache-Control"] == "private, no-store"


def test_readers_who_take_gzip_get_it_compressed_once(page, client):
    plain = client.get("/status/acme")
    zipped = client.get("/status/acme", HTTP_ACCEPT_ENCODING="br, gzip")
    assert zipped["Content-Encoding"] == "gzip"
    assert gzip.decompress(zipped.content) == plain.content
    assert "Accept-Encoding" in zipped["Vary"]
    assert "Accept-Encoding" in plain["Vary"]
    assert zipped["ETag"] != plain["ETag"]
    again = client.get(
        "/status/acme", HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH=zipped["ETag"]
    )
    assert again.status_code == 304

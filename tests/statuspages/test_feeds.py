"""Atom and RSS: public incident updates, newest first, inert HTML, links to the page."""

from datetime import timedelta
from xml.etree import ElementTree

from django.utils import timezone

from monitoring.models import Incident
from tests.statuspages.pages import declare, make_page

ATOM = "{http://www.w3.org/2005/Atom}"


def feed(client, kind):
    response = client.get(f"/status/acme/history.{kind}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith(f"application/{kind}+xml")
    return response.content, ElementTree.fromstring(response.content)  # noqa: S314 - our own output


def _incidents(cast, make_endpoint):
    endpoint = make_endpoint(cast.project, name="API")
    now = timezone.now()
    declare(
        cast.org,
        [endpoint],
        at=now - timedelta(days=2),
        title="First",
        updates=["one", "two"],
        resolved_at=now - timedelta(days=1),
        state="resolved",
    )
    later = declare(cast.org, [endpoint], at=now - timedelta(hours=1), title="Second")
    later.updates.create(
        state="identified",
        message="<script>alert(1)</script>",
        message_html="<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>",
    )
    declare(cast.org, [endpoint], at=now, title="Private", public=False, updates=["hush"])
    Incident.objects.create(
        endpoint=endpoint,
        started_at=now - timedelta(days=3),
        resolved_at=now - timedelta(days=3) + timedelta(minutes=5),
        cause="refused by 10.0.0.9",
    )
    make_page(cast.org, {"Core": [endpoint]})


def test_atom_lists_public_updates_newest_first(cast, make_endpoint, client):
    _incidents(cast, make_endpoint)

    body, root = feed(client, "atom")

    titles = [entry.findtext(f"{ATOM}title") for entry in root.iter(f"{ATOM}entry")]
    assert titles == [
        "Second: Identified",
        "First: Investigating",
        "First: Investigating",
        "API is down: Resolved",
        "API is down: Investigating",
    ]
    links = {link.get("href") for link in root.iter(f"{ATOM}link")}
    assert any(href.endswith("/status/acme") for href in links)
    assert any("/status/acme#incident-" in href for href in links)
    assert b"Private" not in body
    assert b"hush" not in body
    assert b"10.0.0.9" not in body


def test_rss_lists_the_same_and_links_to_the_page(cast, make_endpoint, client):
    _incidents(cast, make_endpoint)

    body, root = feed(client, "rss")

    channel = root.find("channel")
    assert channel.findtext("link").endswith("/status/acme")
    titles = [item.findtext("title") for item in channel.iter("item")]
    assert titles[0] == "Second: Identified"
    assert len(titles) == 5
    assert b"Private" not in body
    assert b"hush" not in body


def test_update_html_stays_inert_in_feeds(cast, make_endpoint, client):
    _incidents(cast, make_endpoint)
    for kind in ("atom", "rss"):
        body, root = feed(client, kind)
        assert b"<script" not in body  # escaped as text, never markup of the feed
        assert not list(root.iter("script"))

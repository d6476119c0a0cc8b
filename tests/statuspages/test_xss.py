"""An XSS corpus in every text a team writes that a status page shows (endpoint names, the
page's title and description, section names, incident titles, update Markdown, maintenance
names) stays inert: on the page, in the Atom and RSS feeds (whose HTML a reader renders)
and in summary.json."""

import json
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any
from xml.etree import ElementTree

import pytest
from django.test import Client
from django.utils import timezone

from alerts.models import MaintenanceWindow
from alerts.services import maintenance_window_save

CORPUS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "<svg onload=alert(3)>",
    "javascript:alert(4)",
    '<a href="javascript:alert(5)">x</a>',
    "[click](javascript:alert(6))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCg3KTwvc2NyaXB0Pg==)",
    "<iframe src=//evil.example></iframe>",
    "&lt;script&gt;alert(8)&lt;/script&gt;",
    "<IMG SRC=JaVaScRiPt:alert(9)>",
    "[x](&#106;avascript:alert(10))",
    "<details open ontoggle=alert(11)>",
    "'';!--\"<XSS>=&{()}",
    "<style>body{display:none}</style>",
]
PAYLOAD = " ".join(CORPUS)
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "srcset", "poster"}
DANGEROUS_TAGS = {"iframe", "object", "embed", "base", "xss"}


class Inert(HTMLParser):
    """Collects what would run: inline scripts, event handlers, script URLs, active tags."""

    def __init__(self, *, page: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            src = dict(attrs).get("src") or ""
            # The page's own scripts are files it serves itself; content may have none.
            if not (self.page and src.startswith("/static/")):
                self.found.append(f"<script src={src!r}>")
        if tag in DANGEROUS_TAGS or (tag == "style" and not self.page):
            self.found.append(f"<{tag}>")
        # The page's own <meta> tags (charset, viewport, colour scheme) are fine; none
        # may refresh or redirect, and content may bring none at all.
        if tag == "meta" and (not self.page or "http-equiv" in dict(attrs)):
            self.found.append(f"<meta {attrs}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"{tag}[{name}]")
            url = "".join((value or "").split()).lower()
            if name in URL_ATTRIBUTES and url.startswith(("javascript:", "data:", "vbscript:")):
                self.found.append(f"{tag}[{name}={value}]")


def inert(html: str, *, page: bool = False) -> list[str]:
    parser = Inert(page=page)
    parser.feed(html)
    parser.close()
    return parser.found


@pytest.fixture
def xss_page(api: Any, cast: Any, make_endpoint: Any, record: Any) -> str:
    """A public page where every text a team writes carries the corpus; returns its slug."""
    endpoint = make_endpoint(cast.project, name=PAYLOAD[:200], failure_threshold=1)
    other = make_endpoint(cast.project, name="<b>bold</b> <script>alert(12)</script>")
    start = timezone.now() + timedelta(seconds=1)  # after it was made: the check counts
    record(endpoint, [(start, False, 0.0, PAYLOAD[:400])])
    owner = api.as_user(cast.owner)
    body = {
        "name": PAYLOAD[:200],
        "slug": "xss",
        "title": PAYLOAD[:200],
        "description": PAYLOAD,
        "visibility": "public",
        "show_response_times": True,
        "sections": [{"name": PAYLOAD[:200], "endpoints": [str(endpoint.pk), str(other.pk)]}],
    }
    assert owner.post("/api/v1/status-pages", body, format="json").status_code == 201
    incident = endpoint.incidents.get()
    update = {"status": "identified", "message": PAYLOAD, "notify_subscribers": False}
    answer = owner.post(f"/api/v1/incidents/{incident.pk}/updates", update, format="json")
    assert answer.status_code in (200, 201), answer.content
    declared = {
        "title": PAYLOAD[:200],
        "endpoints": [str(other.pk)],
        "impact": "degraded_performance",
        "message": PAYLOAD,
        "public": True,
    }
    assert owner.post("/api/v1/incidents", declared, format="json").status_code == 201
    soon = timezone.now() + timedelta(hours=2)
    maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        name=PAYLOAD[:200],
        starts_at=soon,
        ends_at=soon + timedelta(hours=1),
        recurrence="",
        projects=[],
        endpoints=[endpoint],
    )
    return "xss"


def test_the_corpus_is_inert_on_the_page(xss_page):
    response = Client().get(f"/status/{xss_page}")

    assert response.status_code == 200
    html = response.content.decode()
    assert inert(html, page=True) == []
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown as text, not dropped


def feed_html(xml: bytes) -> list[str]:
    """The texts of an Atom or RSS feed a reader renders as HTML."""
    root = ElementTree.fromstring(xml)  # noqa: S314 - our own feed, the thing under test
    texts = []
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag in {"content", "summary", "description"} or element.get("type") == "html":
            texts.append(element.text or "")
        if element.get("type") == "xhtml":
            texts.append(ElementTree.tostring(element, encoding="unicode"))
    return texts


@pytest.mark.parametrize("suffix", ["history.atom", "history.rss"])
def test_the_corpus_is_inert_in_the_feeds(xss_page, suffix):
    response = Client().get(f"/status/{xss_page}/{suffix}")

    assert response.status_code == 200
    texts = feed_html(response.content)
    assert texts, "the feed shows the incidents"
    for text in texts:
        assert inert(text) == [], text


def test_summary_json_is_json_that_no_browser_renders_as_html(xss_page):
    response = Client().get(f"/status/{xss_page}/summary.json")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert response["X-Content-Type-Options"] == "nosniff"
    summary = json.loads(response.content)
    assert summary["page"]["name"] == PAYLOAD[:200]  # kept as written: JSON escapes itself
    for incident in summary["incidents"]:
        for update in incident.get("incident_updates", incident.get("updates", [])):
            assert inert(update.get("body_html", update.get("message_html", ""))) == []

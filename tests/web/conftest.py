"""Fixtures for the server-rendered pages: a browser-like client signed in as someone, and
helpers that read the pages' HTML the way a browser would (tags, attributes, visible text)."""

import re
from collections.abc import Callable, Sequence
from datetime import datetime
from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client

from accounts.models import User
from monitoring.checks import CheckOutcome
from monitoring.models import Endpoint
from monitoring.probes import ProbeResult
from pipeline.checks import checks_record


class Pages(Client):
    """A Django test client that runs on-commit callbacks (mail tasks) like a real request."""

    def __init__(self, capture: Callable[..., Any], csrf: bool = False, **defaults: Any) -> None:
        super().__init__(enforce_csrf_checks=csrf, **defaults)
        self._capture = capture

    def request(self, **request: Any) -> Any:
        with self._capture(execute=True):
            return super().request(**request)

    def as_user(self, user: User | None) -> "Pages":
        """Sign in as this user (or sign out)."""
        self.logout()
        if user is not None:
            self.force_login(user)
        return self


@pytest.fixture
def pages(django_capture_on_commit_callbacks: Callable[..., Any]) -> Pages:
    return Pages(django_capture_on_commit_callbacks)


@pytest.fixture
def make_pages(django_capture_on_commit_callbacks: Callable[..., Any]) -> Callable[..., Pages]:
    """Another browser (its own cookies); `csrf=True` checks CSRF tokens as a browser meets them."""

    def make(csrf: bool = False) -> Pages:
        return Pages(django_capture_on_commit_callbacks, csrf=csrf)

    return make


Observed = tuple[datetime, bool, float, str, str]


@pytest.fixture
def record_observed() -> Callable[..., int]:
    """Store checks with what a probe saw: (at, ok, ms, error, status_detail)."""

    def store(endpoint: Endpoint, checks: Sequence[Observed]) -> int:
        outcomes = [
            CheckOutcome(
                endpoint.pk,
                at,
                at,
                ProbeResult(
                    ok=ok,
                    response_time_ms=ms,
                    error=error,
                    status_detail=detail,
                    started_at=at.timestamp(),
                ),
            )
            for at, ok, ms, error, detail in checks
        ]
        return checks_record(outcomes=outcomes)

    return store


# --- Reading pages ---------------------------------------------------------------------------


def html(response: Any) -> str:
    """The page's markup."""
    return response.content.decode()


class Markup(HTMLParser):
    """Every start tag with its attributes, the scripts' bodies and the visible text."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.script_bodies: list[str] = []
        self._in: list[str] = []
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style", "title"):
            self._in.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if self._in and self._in[-1] == tag:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        if "script" in self._in:
            self.script_bodies.append(data)
        elif not self._in:
            self.text.append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        """The attributes of every `tag` whose attributes include these."""
        wanted = {name.replace("_", "-"): value for name, value in attrs.items()}
        return [
            found
            for name, found in self.tags
            if name == tag and all(found.get(k) == v for k, v in wanted.items())
        ]


def visible_text(response_or_markup: Any) -> str:
    """The page's text as a reader sees it (entities decoded, whitespace collapsed)."""
    source = response_or_markup if isinstance(response_or_markup, str) else html(response_or_markup)
    return " ".join(" ".join(Markup(source).text).split())


def fragment(response: Any, start: str, end: str = "</tr>") -> str:
    """The markup from the first occurrence of `start` to the next `end`."""
    source = html(response)
    at = source.index(start)
    return source[at : source.index(end, at) + len(end)]


def cells(row_markup: str) -> list[str]:
    """The visible text of each cell (`td` or `th`) of one table row's markup."""
    found = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row_markup, flags=re.S)
    return [visible_text(cell) for cell in found]


def endpoint_row(response: Any, endpoint: Endpoint) -> list[str]:
    """The cells of an endpoint's row (overview, compare)."""
    return cells(fragment(response, f'<tr data-endpoint="{endpoint.pk}">'))


def csrf_token(pages: Client, url: str) -> str:
    """The CSRF token a form on this page carries."""
    response = pages.get(url)
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html(response))
    assert match, html(response)[:2000]
    return match.group(1)


class _FormReader(HTMLParser):
    """The values a browser would submit for one form, as the page shows it."""

    def __init__(self, action: str) -> None:
        super().__init__(convert_charrefs=True)
        self.action = action
        self.values: dict[str, list[str]] = {}
        self._inside = False
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form":
            self._inside = found.get("action") == self.action
        if not self._inside:
            return
        name = found.get("name", "")
        if tag == "input" and name:
            kind = found.get("type", "text")
            if kind not in ("checkbox", "radio") or "checked" in found:
                self.values.setdefault(name, []).append(found.get("value", ""))
        elif tag == "select":
            self._select = name
        elif tag == "option" and self._select and "selected" in found:
            self.values.setdefault(self._select, []).append(found.get("value", ""))
        elif tag == "textarea":
            self._textarea = name
            self.values[name] = [""]

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._inside = False
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._inside and self._textarea:
            self.values[self._textarea][-1] += data


def form_values(response: Any, action: str) -> dict[str, Any]:
    """What submitting the form posting to `action` unchanged would send."""
    reader = _FormReader(action)
    reader.feed(html(response))
    values: dict[str, Any] = {
        name: found[0] if len(found) == 1 else found for name, found in reader.values.items()
    }
    values.pop("csrfmiddlewaretoken", None)
    return values

"""Public status responses from Django's cache, so that a stampede of readers during an
outage costs one render every few seconds, not one per request.

Per page and format one entry holds the body, its ETag, its Last-Modified and the page
version it was rendered at. An entry is fresh for `FRESH_SECONDS` and while the page
version is unchanged; `page_cache_bump` changes the version at once: after page edits
(`statuspages.services.pages`) and, through `statuspages.signals`, after an incident the page
shows is declared, edited, resolved or gets an update. Endpoint states and the incidents the
check pipeline opens and resolves show through freshness alone. A stale entry is still
served while one request, holding a `cache.add` lock, renders the new one
(stale-while-revalidate): readers never queue behind a render, and at most one render runs
per page and format. Only a cold cache makes readers wait, briefly,
for the lock holder's render instead of each rendering it.

Each process also keeps the entries it served: while one is fresh and the page version
is unchanged, its body is not fetched from Redis again. The version itself is read at most
once per `LOCAL_TRUST_SECONDS` per entry, and the page row behind a slug at most as often
(`page_by_slug`): a reader of a busy page costs no network round trip at all, and an edit
made in another process shows here within that second (at once in the editing process).
Responses are stored with a gzip copy made once per render.
"""

import gzip
import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.cache import get_conditional_response, patch_vary_headers
from django.utils.http import http_date

from statuspages.models import StatusPage, Visibility

# A state change shows within FRESH_SECONDS on the server plus MAX_AGE in browsers and
# shared caches: 10 s at most.
FRESH_SECONDS = 8
MAX_AGE = 2
# How long an entry stays to be served stale (a render always replaces it sooner).
KEEP_SECONDS = 600
# How long a render may hold the lock before another request may take it over.
LOCK_SECONDS = 30
# How long a reader of a cold cache waits for another's render before rendering itself.
COLD_WAIT_SECONDS = 2.0
COLD_POLL_SECONDS = 0.02
# How long this process trusts what it holds (entries, pages by slug) without asking Redis
# or the database whether they changed.
LOCAL_TRUST_SECONDS = 1.0


@dataclass(frozen=True)
class Rendered:
    """What a render returns: the body and its media type."""

    body: bytes
    content_type: str


@dataclass(frozen=True)
class Entry:
    """A cached response body with its validators."""

    body: bytes
    gzipped: bytes  # compressed once per render, not once per reader
    content_type: str
    etag: str
    last_modified: float  # epoch seconds
    version: int
    rendered_at: float  # epoch seconds

    def fresh(self, version: int, now: float) -> bool:
        """Whether it may be served without a new render."""
        return self.version == version and now - self.rendered_at < FRESH_SECONDS


def _version_key(page_id: object) -> str:
    return f"statuspages:version:{page_id}"


def _entry_key(page_id: object, fmt: str) -> str:
    return f"statuspages:entry:{page_id}:{fmt}"


def _new_version() -> int:
    # Random, not 1: a cache emptied and started again must not revive the old entries
    # the processes still hold (`_LOCAL`).
    return secrets.randbelow(2**31)


def page_cache_bump(page_id: object) -> None:
    """Mark a page's cached responses stale at once (after a page edit, an incident or
    an update that it shows); the next reader renders anew."""
    local_forget()
    key = _version_key(page_id)
    if not cache.add(key, _new_version(), timeout=None):
        try:
            cache.incr(key)
        except ValueError:  # evicted between add and incr
            cache.set(key, _new_version(), timeout=None)


def _version(page_id: object) -> int:
    """The page's current version, set when missing (first read, or an emptied cache)."""
    key = _version_key(page_id)
    version = cache.get(key)
    if version is None:
        cache.add(key, _new_version(), timeout=None)
        version = cache.get(key, 0)
    return int(version)


def _render(render: Callable[[], Rendered], previous: Entry | None, version: int) -> Entry:
    done = render()
    etag = '"' + hashlib.sha256(done.body).hexdigest()[:32] + '"'
    now = timezone.now().timestamp()
    # An unchanged body keeps its Last-Modified: If-Modified-Since stays honest.
    modified = previous.last_modified if previous and previous.etag == etag else now
    gzipped = gzip.compress(done.body, compresslevel=6, mtime=0)
    return Entry(done.body, gzipped, done.content_type, etag, int(modified), version, now)


# This process's copies of entries it served, by cache key, with when their version was
# last confirmed; and pages by slug with when they were read. Bounded by emptying whole.
_LOCAL: dict[str, Entry] = {}
_CONFIRMED: dict[str, float] = {}
_PAGES: dict[str, tuple[float, StatusPage | None]] = {}
_LOCAL_MAX = 256


def local_forget() -> None:
    """Drop what this process holds (after a write here; between tests)."""
    _LOCAL.clear()
    _CONFIRMED.clear()
    _PAGES.clear()


def _keep(key: str, entry: Entry) -> Entry:
    if len(_LOCAL) >= _LOCAL_MAX:
        local_forget()
    _LOCAL[key] = entry
    _CONFIRMED[key] = time.monotonic()
    return entry


def page_by_slug(slug: str) -> StatusPage | None:
    """The page behind a public slug, read from the database at most once a second per
    process (None: no such page): a stampede on one page costs no query per reader."""
    now = time.monotonic()
    held = _PAGES.get(slug)
    if held is not None and now - held[0] < LOCAL_TRUST_SECONDS:
        return held[1]
    page = StatusPage.objects.filter(slug=slug).first()
    if len(_PAGES) >= _LOCAL_MAX:
        _PAGES.clear()
    _PAGES[slug] = (now, page)
    return page


def _entry(page_id: object, fmt: str, render: Callable[[], Rendered]) -> Entry:
    """The entry to serve: the cached one when fresh; else rendered by whoever takes the
    lock, the others serving the stale entry (or, on a cold cache, waiting for it)."""
    key, lock = _entry_key(page_id, fmt), _entry_key(page_id, fmt) + ":lock"
    now = timezone.now().timestamp()
    # This process's copy first: a fresh one spares fetching the body (hundreds of kB for
    # a large page) from Redis on every request, and within LOCAL_TRUST_SECONDS of its
    # last confirmation even the version read.
    local = _LOCAL.get(key)
    trusted = time.monotonic() - _CONFIRMED.get(key, float("-inf")) < LOCAL_TRUST_SECONDS
    if local is not None and trusted and local.fresh(local.version, now):
        return local
    version = _version(page_id)
    if local is not None and local.fresh(version, now):
        _CONFIRMED[key] = time.monotonic()
        return local
    entry: Entry | None = cache.get(key)
    if entry is not None and entry.fresh(version, now):
        return _keep(key, entry)
    if cache.add(lock, 1, timeout=LOCK_SECONDS):
        try:
            # The lock may be free because its holder just finished: its entry is then
            # there (read again), and rendering it once more is what the lock prevents.
            done: Entry | None = cache.get(key)
            if done is not None and done.fresh(version, now):
                return _keep(key, done)
            fresh = _render(render, entry, version)
            cache.set(key, fresh, timeout=KEEP_SECONDS)
            return _keep(key, fresh)
        finally:
            cache.delete(lock)
    if entry is not None:
        return entry
    deadline = time.monotonic() + COLD_WAIT_SECONDS
    while time.monotonic() < deadline:
        time.sleep(COLD_POLL_SECONDS)
        entry = cache.get(key)
        if entry is not None:
            return entry
    return _render(render, None, version)


def cached_response(
    request: HttpRequest, *, page: StatusPage, fmt: str, render: Callable[[], Rendered]
) -> HttpResponse:
    """Serve one format of a page from the cache with ETag and Last-Modified, answering
    304 to a reader who has it; public pages may be cached anywhere for `MAX_AGE`, others
    nowhere."""
    entry = _entry(page.pk, fmt, render)
    # A 50-component page is ~300 kB of repetitive SVG and ~20 kB gzipped.
    zipped = "gzip" in request.headers.get("Accept-Encoding", "")
    etag = entry.etag[:-1] + '-gz"' if zipped else entry.etag  # one tag per representation
    response = get_conditional_response(request, etag=etag, last_modified=int(entry.last_modified))
    if response is None:
        response = HttpResponse(
            entry.gzipped if zipped else entry.body, content_type=entry.content_type
        )
        if zipped:
            response["Content-Encoding"] = "gzip"
    response["ETag"] = etag
    response["Last-Modified"] = http_date(entry.last_modified)
    patch_vary_headers(response, ["Accept-Encoding"])
    if page.visibility == Visibility.PUBLIC:
        response["Cache-Control"] = f"public, max-age={MAX_AGE}"
    else:
        response["Cache-Control"] = "private, no-store"
    return response

"""The public status page: what it shows, what it never shows, and what it costs."""

import gc
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from alerts.models import MaintenanceWindow
from analytics.models import DayRollup, HourRollup
from monitoring.models import Endpoint, Incident, IncidentNote
from statuspages.cache import page_cache_bump
from statuspages.models import Visibility
from statuspages.views import public
from tests.statuspages.pages import declare, make_page

LINKS = {"atom": "a", "rss": "r", "summary": "s", "subscribe": "/subscribe"}
ROUTES = ("", "/summary.json", "/history.atom", "/history.rss")
SECRET_TARGET = "https://db-7.internal.acme.test:8443/health?token=s3cr3t-t0ken"
SECRET_ERROR = "connect to 10.1.2.3:5432 refused (password=hunter2)"


def page_text(client, slug="acme"):
    response = client.get(f"/status/{slug}")
    assert response.status_code == 200, response.content
    return response.content.decode()


def test_the_page_shows_sections_and_components_in_order_with_their_status(
    cast, make_endpoint, client
):
    api, web, db = (make_endpoint(cast.project, name=n) for n in ("API", "Website", "Database"))
    Endpoint.objects.filter(pk=db.pk).update(status="down")
    make_page(cast.org, {"Backend": [api, db], "Frontend": [web]}, title="Acme status")

    text = page_text(client)

    assert text.index("Backend") < text.index("API") < text.index("Database")
    assert text.index("Database") < text.index("Frontend") < text.index("Website")
    assert "Acme status" in text
    # Status in words as well as colour, and the banner in the overall state's tone.
    assert "Major outage" in text
    assert "status-major_outage" in text
    assert 'class="banner tone-major"' in text
    assert "Partial outage" in text


def test_an_unknown_slug_and_a_non_public_page_are_the_same_404(cast, make_endpoint, client):
    make_page(cast.org, {"Core": [make_endpoint(cast.project)]}, visibility=Visibility.PRIVATE)
    for url in ("/status/acme", "/status/nope"):
        for suffix in ("", "/summary.json", "/history.atom", "/history.rss"):
            assert client.get(url + suffix).status_code == 404


def test_only_get_and_head_are_answered(cast, make_endpoint, client):
    make_page(cast.org, {"Core": [make_endpoint(cast.project)]})
    assert client.head("/status/acme").status_code == 200
    assert client.post("/status/acme").status_code == 405


def test_a_component_of_another_organization_is_never_shown(cast, make_endpoint, client):
    ours = make_endpoint(cast.project, name="Ours")
    theirs = make_endpoint(cast.other_project, name="Theirs-secret-name")
    make_page(cast.org, {"Core": [ours, theirs]})
    text = page_text(client)
    assert "Ours" in text
    assert "Theirs-secret-name" not in text


def test_nothing_private_reaches_any_public_route(cast, make_endpoint, record, client):
    endpoint = make_endpoint(cast.project, name="Checkout", target=SECRET_TARGET)
    now = timezone.now()
    record(endpoint, [(now - timedelta(minutes=m), False, 5.0, SECRET_ERROR) for m in (3, 2, 1)])
    Endpoint.objects.filter(pk=endpoint.pk).update(status="down")
    incident = Incident.objects.create(
        endpoint=endpoint, started_at=now - timedelta(minutes=3), cause=SECRET_ERROR
    )
    IncidentNote.objects.create(incident=incident, text="note: call owner@acme.test")
    make_page(cast.org, {"Shop": [endpoint]}, show_response_times=True)

    for suffix in ("", "/summary.json", "/history.atom", "/history.rss"):
        body = client.get("/status/acme" + suffix).content.decode()
        for secret in ("db-7", "internal", "8443", "s3cr3t", "10.1.2.3", "5432", "hunter2"):
            assert secret not in body, (suffix, secret)
        assert "owner@acme.test" not in body
        assert "note:" not in body
        assert str(endpoint.pk) not in body
        # An automatic incident with no update reads as its component, never its cause.
        assert "Checkout is down — investigating" in body, suffix


def test_updates_render_their_sanitised_html_never_the_raw_message(cast, make_endpoint, client):
    endpoint = make_endpoint(cast.project, name="API")
    incident = declare(cast.org, [endpoint], at=timezone.now() - timedelta(hours=1))
    incident.updates.create(
        state="identified",
        message="<script>alert(1)</script> **fixing**",
        message_html="<p>&lt;script&gt;alert(1)&lt;/script&gt; <strong>fixing</strong></p>",
    )
    make_page(cast.org, {"Core": [endpoint]})

    text = page_text(client)

    assert "<strong>fixing</strong>" in text
    assert "<script>alert(1)" not in text
    assert "**fixing**" not in text
    assert "Slow logins" in text
    assert "Identified" in text
    assert "status-partial_outage" in text  # the declared impact sets the component's status


def test_non_public_incidents_stay_off_the_page(cast, make_endpoint, client):
    endpoint = make_endpoint(cast.project, name="API")
    declare(cast.org, [endpoint], at=timezone.now(), title="Quiet fix", public=False)
    make_page(cast.org, {"Core": [endpoint]})
    text = page_text(client)
    assert "Quiet fix" not in text
    assert "status-operational" in text


def test_history_holds_the_last_14_days_of_resolved_incidents(cast, make_endpoint, client):
    endpoint = make_endpoint(cast.project, name="API")
    now = timezone.now()
    for title, days in (("Recent one", 3), ("Old one", 20)):
        declare(
            cast.org,
            [endpoint],
            at=now - timedelta(days=days, hours=1),
            resolved_at=now - timedelta(days=days),
            state="resolved",
            title=title,
        )
    make_page(cast.org, {"Core": [endpoint]})
    text = page_text(client)
    history = text[text.index("Past incidents") :]
    assert "Recent one" in history
    assert "Old one" not in history


def test_day_bars_show_uptime_incidents_and_days_without_data(cast, make_endpoint, record, client):
    endpoint = make_endpoint(cast.project, name="API")
    now = timezone.now()
    yesterday = (now - timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
    checks = [(yesterday + timedelta(minutes=m), m != 0, 10.0) for m in range(4)]
    record(endpoint, checks)
    declare(cast.org, [endpoint], at=yesterday, resolved_at=yesterday + timedelta(minutes=5))
    make_page(cast.org, {"Core": [endpoint]}, uptime_days=30)

    text = page_text(client)

    assert text.count("<rect ") == 30
    assert f"{yesterday:%d %b %Y}\n75% uptime\nIncident: Slow logins" in text
    assert "No data" in text  # the days before the endpoint existed
    assert "75% uptime" in text  # the period's uptime beside the bars


def test_maintenance_shows_name_and_times_and_holds_the_component(cast, make_endpoint, client):
    endpoint = make_endpoint(cast.project, name="API")
    Endpoint.objects.filter(pk=endpoint.pk).update(status="down")
    now = timezone.now()
    MaintenanceWindow.objects.create(
        organization=cast.org,
        name="DB upgrade",
        starts_at=now - timedelta(hours=1),
        ends_at=now + timedelta(hours=1),
    )
    MaintenanceWindow.objects.create(
        organization=cast.org,
        name="Network work",
        starts_at=now + timedelta(days=2),
        ends_at=now + timedelta(days=2, hours=1),
    )
    MaintenanceWindow.objects.create(
        organization=cast.other_org,
        name="Their window",
        starts_at=now - timedelta(hours=1),
        ends_at=now + timedelta(hours=1),
    )
    make_page(cast.org, {"Core": [endpoint]})

    text = page_text(client)

    assert "DB upgrade" in text
    assert "In progress" in text
    assert "Network work" in text
    assert "Their window" not in text
    assert "status-under_maintenance" in text
    assert "tone-maintenance" in text


def test_the_sparkline_shows_only_when_the_page_asks(cast, make_endpoint, record, client):
    endpoint = make_endpoint(cast.project, name="API")
    record(endpoint, [(timezone.now() - timedelta(minutes=5), True, 42.0)])
    page = make_page(cast.org, {"Core": [endpoint]})
    assert 'class="sparkline"' not in page_text(client)
    page.show_response_times = True
    page.save()
    page_cache_bump(page.pk)  # what the page's editor does after saving
    assert 'class="sparkline"' in page_text(client)


def test_no_sparkline_nor_its_caption_without_a_response_time(cast, make_endpoint, record, client):
    measured, quiet = make_endpoint(cast.project, name="API"), make_endpoint(cast.project)
    record(measured, [(timezone.now() - timedelta(minutes=5), True, 42.0)])
    make_page(cast.org, {"Core": [measured, quiet]}, show_response_times=True)
    text = page_text(client)
    assert text.count('class="sparkline"') == 1
    assert text.count("Response time, last 24 h") == 1


def test_the_page_is_standalone_and_csp_clean(cast, make_endpoint, client):
    make_page(cast.org, {"Core": [make_endpoint(cast.project)]})
    text = page_text(client)
    assert "Sign in" not in text
    assert "topbar" not in text
    assert "<script>" not in text
    assert " style=" not in text
    assert "onclick" not in text
    assert 'rel="alternate" type="application/atom+xml"' in text
    assert 'href="/status/acme/history.rss"' in text
    assert "prefers-color-scheme" not in text  # it lives in the stylesheet


@pytest.mark.parametrize("size", [2, 12])
def test_the_query_count_does_not_grow_with_components_or_days(
    cast, make_endpoint, record, client, django_assert_max_num_queries, size
):
    endpoints = [make_endpoint(cast.project, name=f"E{n}") for n in range(size)]
    now = timezone.now()
    for endpoint in endpoints:
        record(endpoint, [(now - timedelta(days=d), d % 3 != 0, 9.0) for d in range(size)])
        declare(cast.org, [endpoint], at=now - timedelta(days=1), updates=["a", "b"])
    MaintenanceWindow.objects.create(
        organization=cast.org, starts_at=now + timedelta(days=1), ends_at=now + timedelta(days=2)
    )
    make_page(cast.org, {"A": endpoints[::2], "B": endpoints[1::2]}, show_response_times=True)
    with django_assert_max_num_queries(10):
        assert client.get("/status/acme").status_code == 200


@pytest.mark.postgres("the cold-render budget is PostgreSQL's")
@pytest.mark.timing
def test_a_cold_render_of_50_components_by_90_days_is_fast(cast, make_endpoint):
    now = timezone.now()
    endpoints = [make_endpoint(cast.project, name=f"Service {n}") for n in range(50)]
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    DayRollup.objects.bulk_create(
        DayRollup(endpoint=e, bucket=today - timedelta(days=d), count=1440, failures=d % 4)
        for e in endpoints
        for d in range(90)
    )
    HourRollup.objects.bulk_create(
        HourRollup(
            endpoint=e,
            bucket=today - timedelta(hours=h),
            count=60,
            timed=60,
            sum_ms=6000.0 + h,
        )
        for e in endpoints
        for h in range(24)
    )
    for n, endpoint in enumerate(endpoints[:20]):
        declare(cast.org, [endpoint], at=now - timedelta(days=n * 4), updates=["a", "b"])
    page = make_page(
        cast.org,
        {f"S{n}": endpoints[n * 10 : n * 10 + 10] for n in range(5)},
        show_response_times=True,
    )

    # Against a baseline measured in the same run (bench/README.md: ratios, not absolute
    # times): a bare loop writing the page's 4,500 bars as plain strings, the least any
    # render of it must do. This machine's speed varies by a quarter from hour to hour;
    # both slow down together. The absolute goal (a cold render under 50 ms) is measured
    # and reported by bench/status_pages.py.
    renders, bare = [], []
    # As the web process runs (healthmon/wsgi.py): what start-up loaded (Django, DRF,
    # Apprise's plugins: ~150,000 objects) frozen out of the collector, whose full passes
    # over it (~0.1 s each) would otherwise land inside the renders timed here.
    gc.collect()
    gc.freeze()
    try:
        for _ in range(30):
            started = time.perf_counter()
            body = public._page_html(page, LINKS).body
            renders.append(time.perf_counter() - started)
            started = time.perf_counter()
            _bare_bars(50, 90)
            bare.append(time.perf_counter() - started)
    finally:
        gc.unfreeze()

    assert body.count(b"<rect ") == 50 * 90
    # The best of thirty each: the machine may be busy with other work at moments.
    ratio = min(renders) / min(bare)
    assert ratio < RENDER_OVER_BARE, (min(renders), min(bare))


# Measured 2026-11-27 (e362014 and later): 61-63x, the render 53 ms in a slow hour of this
# machine; in a fast hour the same render took 40 ms, so the goal of 50 ms is about 77x.
# 75x: a render doing a fifth more work than today fails, whatever the hour.
RENDER_OVER_BARE = 75.0


def _bare_bars(components: int, days: int) -> str:
    """The page's day bars as plain strings: the baseline of the cold-render test."""
    return "".join(
        f'<rect x="{i * 4}" width="3" height="30" class="o"><title>{n} Nov 2026\n'
        f"100% uptime\nNo incident</title></rect>"
        for n in range(components)
        for i in range(days)
    )


XSS = '<script>alert(1)</script><img src=x onerror=alert(2)>"'


def test_names_and_texts_stay_inert(cast, make_endpoint, client):
    endpoint = make_endpoint(cast.project, name=f"API {XSS}")
    declare(cast.org, [endpoint], at=timezone.now(), title=f"Down {XSS}")
    make_page(
        cast.org, {f"Core {XSS}": [endpoint]}, title=f"Acme {XSS}", description=f"About {XSS}"
    )
    for suffix in ("", "/history.atom", "/history.rss"):
        body = client.get("/status/acme" + suffix).content.decode()
        assert "<script>alert" not in body, suffix
        assert "<img src=x" not in body, suffix
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get("/status/acme").content.decode()


def test_a_page_without_components_renders(cast, client):
    make_page(cast.org, {})
    for suffix in ROUTES:
        assert client.get("/status/acme" + suffix).status_code == 200, suffix
    assert "No components yet" in page_text(client)

"""Charts that fit their data and their screen: a young endpoint's charts start at its first
check and say so, long titles are cut to the drawing's width, the phone drawing keeps its
11-unit text, and a young endpoint's sparkline fills its width."""

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

from analytics.charts import (
    availability_chart,
    comparison_chart,
    response_time_chart,
    sparkline,
)

NS = "{http://www.w3.org/2000/svg}"
END = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
LONG = "payments-gateway-primary.eu-west-1.internal.example.com" * 4


def point(t, avg=120.0):
    return {"t": t, "avg_ms": avg, "min_ms": avg, "max_ms": avg, "p95_ms": avg, "count": 5}


def empty(t):
    return {"t": t, "avg_ms": None, "min_ms": None, "max_ms": None, "p95_ms": None, "count": 0}


def parse(markup):
    return ET.fromstring(str(markup))  # noqa: S314 - our own output, the thing under test


def texts(root, cls):
    return [e.text for e in root.iter(f"{NS}text") if e.get("class") == cls]


def every_kind(**options):
    start = END - timedelta(hours=1)
    points = [point(start + timedelta(minutes=5 * i)) for i in range(12)]
    buckets = [{"t": p["t"], "uptime": 100.0, "downtime_s": 0.0} for p in points]
    return [
        response_time_chart(
            points, start=start, end=END, title=f"Response time of {LONG}", **options
        ),
        availability_chart(
            buckets, [], start=start, end=END, title=f"Availability of {LONG}", **options
        ),
        comparison_chart([(LONG, points)], start=start, end=END, title=LONG, **options),
    ]


def test_a_long_title_is_cut_to_the_drawing_and_kept_whole_as_its_name():
    for width in (960, 320):
        for chart in every_kind(width=width):
            root = parse(chart)
            (caption,) = texts(root, "chart-title")
            assert caption.endswith("\u2026")
            # 8.2 units a bold glyph at most, from x=60 to the note's start
            assert 60 + 8.2 * len(caption) <= width - 14 - 6.2 * 3, (width, caption)
            assert LONG in root.find(f"{NS}title").text


def test_a_young_endpoints_chart_says_where_it_starts():
    since = END - timedelta(minutes=9)
    for chart in every_kind(since=since):
        root = parse(chart)
        assert texts(root, "axis-note") == ["since 11:51 UTC (first check)"]
    for chart in every_kind():
        assert texts(parse(chart), "axis-note") == ["UTC"]


def test_a_week_long_chart_names_the_day_it_starts():
    since = END - timedelta(days=3, minutes=30)
    start = END - timedelta(days=7)
    chart = response_time_chart([point(since)], start=start, end=END, since=since)
    assert texts(parse(chart), "axis-note") == ["since Nov 18 11:30 UTC (first check)"]


def test_the_phone_drawing_is_320_units_wide_with_11_unit_text():
    for chart in every_kind(width=320):
        root = parse(chart)
        assert root.get("viewBox").startswith("0 0 320 ")
        assert root.get("font-size") == "11"
        xs = [float(e.get("x")) for e in root.iter(f"{NS}text") if e.get("x")]
        assert max(xs) <= 320


def test_a_young_endpoints_sparkline_starts_at_its_first_figure():
    start = END - timedelta(hours=24)
    hours = [empty(start + timedelta(hours=h)) for h in range(22)]
    hours += [point(END - timedelta(hours=2), 90.0), point(END - timedelta(hours=1), 110.0)]
    root = parse(sparkline(hours))
    d = root.find(f"{NS}path").get("d")
    xs = [float(x) for x in re.findall(r"([\d.]+),", d)]
    assert min(xs) < 40  # the line begins at the left, not at the right end
    assert max(xs) > 80
    assert "over 2 h" in root.get("aria-label")


def test_a_sparkline_of_one_hour_is_a_line_across():
    root = parse(
        sparkline(
            [empty(END - timedelta(hours=h)) for h in range(2, 24)]
            + [point(END - timedelta(hours=1))]
        )
    )
    d = root.find(f"{NS}path").get("d")
    xs = [float(x) for x in re.findall(r"([\d.]+),", d)]
    assert max(xs) - min(xs) > 100

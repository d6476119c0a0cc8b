"""Server-drawn SVG charts: well-formed, accessible, escaped, CSP-clean, and true to the data.

Pure functions, no database: every chart is parsed as XML and checked by its structure.
"""

import itertools
import math
import re
import time
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest

from analytics.charts import (
    Size,
    availability_chart,
    availability_charts,
    comparison_chart,
    comparison_charts,
    response_time_chart,
    response_time_charts,
    sparkline,
)

NS = "{http://www.w3.org/2000/svg}"
END = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
DAY_START = END - timedelta(hours=24)
HOSTILE = ("<img src=x onerror=alert(1)>", "</title><script>alert(1)</script>", "a\"b&c'd")


def point(t, avg=120.0, low=80.0, high=300.0, p95=250.0, count=10, failures=1):
    return {
        "t": t,
        "avg_ms": avg,
        "min_ms": low,
        "max_ms": high,
        "p95_ms": p95,
        "count": count,
        "failures": failures,
    }


def empty(t):
    return point(t, None, None, None, None, count=0, failures=0)


def day_of_points(step=30, **figures):
    """A day of buckets `step` seconds apart, from DAY_START."""
    return [point(DAY_START + timedelta(seconds=step * i), **figures) for i in range(DAY // step)]


DAY = 86_400


def parse(markup):
    root = ET.fromstring(str(markup))  # noqa: S314 - our own output, the thing under test
    assert root.tag == f"{NS}svg"
    return root


def by_series(root, name):
    return [e for e in root.iter(f"{NS}path") if e.get("data-series") == name]


def moves(d):
    return d.count("M")


def coordinates(d):
    return [tuple(map(float, pair.split(","))) for pair in re.findall(r"-?[\d.]+,-?[\d.]+", d)]


def plot_box(root):
    """(left, top, right, bottom) of the plot, read from the axis line."""
    line = next(e for e in root.iter(f"{NS}path") if e.get("class") == "axis-line")
    left, top, bottom, right = map(float, re.findall(r"[\d.]+", line.get("d")))
    return left, top, right, bottom


def y_ticks(root):
    """(value, y) of each y-axis tick."""
    group = next(e for e in root.iter(f"{NS}g") if e.get("class") == "axis axis-y")
    return [(float(t.get("data-value")), float(t.get("y")) - 4) for t in group]


def value_at(root, y):
    """The value a y stands for, from the axis's first and last ticks."""
    (v0, y0), (v1, y1) = y_ticks(root)[0], y_ticks(root)[-1]
    return v0 + (y0 - y) * (v1 - v0) / (y0 - y1)


def hit_titles(root):
    return [r.find(f"{NS}title").text for r in root.iter(f"{NS}rect") if r.get("class") == "hit"]


def every_chart():
    incidents = [incident("i1", DAY_START + timedelta(hours=2), DAY_START + timedelta(hours=3))]
    buckets = [bucket(DAY_START + timedelta(hours=h), 100.0) for h in range(24)]
    return [
        response_time_chart(day_of_points(300), start=DAY_START, end=END),
        availability_chart(buckets, incidents, start=DAY_START, end=END),
        comparison_chart([("a", day_of_points(300))], start=DAY_START, end=END),
    ]


def bucket(t, uptime, downtime=0.0):
    return {"t": t, "uptime": uptime, "downtime_s": downtime}


def incident(id_, started, resolved, cause="connection refused", duration=None):
    if duration is None and resolved is not None:
        duration = (resolved - started).total_seconds()
    return {
        "id": id_,
        "started_at": started,
        "resolved_at": resolved,
        "duration_seconds": duration,
        "cause": cause,
    }


# --- Response time --------------------------------------------------------------------------


def test_response_chart_draws_the_band_and_four_lines():
    root = parse(response_time_chart(day_of_points(300), start=DAY_START, end=END))

    for name in ("band", "min", "max", "avg", "p95"):
        (path,) = by_series(root, name)
        assert moves(path.get("d")) == 1
    assert by_series(root, "p95")[0].get("stroke-dasharray")
    assert by_series(root, "band")[0].get("d").endswith("Z")
    assert "chart" in root.get("class").split()
    assert root.get("viewBox") == "0 0 960 280"


def test_a_missing_bucket_leaves_a_gap_not_a_zero():
    points = day_of_points(3600)
    points[10] = empty(points[10]["t"])
    root = parse(response_time_chart(points, start=DAY_START, end=END))
    _, _, _, bottom = plot_box(root)

    for name in ("avg", "min", "max", "p95", "band"):
        d = by_series(root, name)[0].get("d")
        assert moves(d) == 2, name
        assert all(abs(y - bottom) > 1 for _, y in coordinates(d)), name
    assert by_series(root, "band")[0].get("d").count("Z") == 2


def test_a_lone_point_between_gaps_spans_its_column():
    points = [empty(DAY_START + timedelta(hours=h)) for h in range(24)]
    points[5] = point(points[5]["t"])
    root = parse(response_time_chart(points, start=DAY_START, end=END))
    left, _, right, _ = plot_box(root)

    (first, y0), (second, y1) = coordinates(by_series(root, "avg")[0].get("d"))
    assert y0 == y1
    assert second - first == pytest.approx((right - left) / 24, abs=0.2)


def test_downsampling_keeps_the_extremes_and_weights_the_average():
    points = day_of_points(30, avg=100.0, low=50.0, high=200.0, p95=150.0, count=1, failures=0)
    for i in range(0, len(points), 2):  # pairs: 9 good checks at 100 ms, 1 at 200 ms
        points[i].update(count=10, failures=1)
        points[i + 1].update(avg_ms=200.0, count=1, failures=0)
    points[1234].update(max_ms=987.0)
    points[777].update(min_ms=3.0)
    root = parse(response_time_chart(points, start=DAY_START, end=END, max_columns=320))

    titles = hit_titles(root)
    assert len(titles) == 288  # 10 buckets a column: 5 minutes, not 4.5
    assert titles[1].startswith("12:05\u201312:10 UTC")
    assert all("avg 110 ms" in title for title in titles)  # (9 x 100 + 1 x 200) / 10
    assert all("55 checks, 5 failed" in title for title in titles)
    assert sum("max 987 ms" in title for title in titles) == 1
    assert sum("min 3 ms" in title for title in titles) == 1
    highest = min(y for _, y in coordinates(by_series(root, "max")[0].get("d")))
    lowest = max(y for _, y in coordinates(by_series(root, "min")[0].get("d")))
    assert value_at(root, highest) == pytest.approx(987, abs=3)
    assert value_at(root, lowest) == pytest.approx(3, abs=3)
    assert all(moves(by_series(root, name)[0].get("d")) == 1 for name in ("avg", "band"))


def test_downsampling_falls_back_to_a_plain_mean_without_successful_checks():
    points = day_of_points(30, count=4, failures=4)
    for i in range(1, len(points), 2):
        points[i].update(avg_ms=200.0)
    root = parse(response_time_chart(points, start=DAY_START, end=END, max_columns=1440))

    assert all("avg 160 ms" in title for title in hit_titles(root))  # (120 + 200) / 2


def test_a_column_hover_detail_gives_every_figure():
    points = [point(DAY_START + timedelta(minutes=5 * i)) for i in range(288)]
    points[1].update(avg_ms=1.25, min_ms=0.5, max_ms=1500.0, p95_ms=12.0, count=3, failures=0)
    root = parse(response_time_chart(points, start=DAY_START, end=END))

    titles = hit_titles(root)
    assert titles[0] == (
        "12:00\u201312:05 UTC \u2014 avg 120 ms, min 80 ms, max 300 ms, p95 250 ms, "
        "10 checks, 1 failed"
    )
    assert titles[1] == (
        "12:05\u201312:10 UTC \u2014 avg 1.25 ms, min 0.5 ms, max 1.5 s, p95 12 ms, 3 checks"
    )


def test_points_outside_the_range_are_left_out_and_edges_clipped():
    points = [point(DAY_START + timedelta(hours=h)) for h in range(-3, 27)]
    start = DAY_START + timedelta(minutes=30)  # the 00:00 bucket straddles the start
    root = parse(response_time_chart(points, start=start, end=END))
    left, _, right, _ = plot_box(root)

    xs = [x for x, _ in coordinates(by_series(root, "avg")[0].get("d"))]
    assert len(xs) == 24
    assert all(left < x < right for x in xs)
    hits = [r for r in root.iter(f"{NS}rect") if r.get("class") == "hit"]
    assert float(hits[0].get("x")) == left
    assert float(hits[0].get("width")) == pytest.approx((right - left) / 23.5 / 2, abs=0.1)
    assert float(hits[-1].get("x")) + float(hits[-1].get("width")) == pytest.approx(right, abs=0.1)


@pytest.mark.parametrize("top", [0.37, 3.7, 87, 120, 999, 1234, 48_000])
def test_y_ticks_are_round_numbers_from_zero(top):
    points = day_of_points(3600, avg=top / 2, low=top / 4, high=top, p95=top * 0.9)
    root = parse(response_time_chart(points, start=DAY_START, end=END))

    values = [value for value, _ in y_ticks(root)]
    steps = {round(b - a, 9) for a, b in itertools.pairwise(values)}
    (step,) = steps
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert values[0] == 0
    assert round(mantissa, 9) in {1, 2, 5}
    assert values[-1] >= top > values[-2]
    assert 3 <= len(values) <= 7


def test_tick_and_hover_labels_are_readable_units():
    root = parse(response_time_chart(day_of_points(3600, high=2400.0), start=DAY_START, end=END))

    labels = [t.text for t in root.iter(f"{NS}text") if t.get("data-value")]
    assert labels == ["0 ms", "500 ms", "1 s", "1.5 s", "2 s", "2.5 s"]


def test_time_labels_are_clock_times_up_to_two_days_and_dates_beyond():
    day = parse(response_time_chart(day_of_points(3600), start=DAY_START, end=END))
    month_start = END - timedelta(days=30)
    month = parse(response_time_chart([point(month_start)], start=month_start, end=END))

    def x_labels(root):
        group = next(e for e in root.iter(f"{NS}g") if e.get("class") == "axis axis-x")
        return [t.text for t in group]

    assert all(re.fullmatch(r"\d\d:\d\d", label) for label in x_labels(day))
    assert "15:00" in x_labels(day)
    assert all(re.fullmatch(r"[A-Z][a-z]{2} \d{1,2}", label) for label in x_labels(month))
    assert "Nov 2" in x_labels(month)  # a Monday
    texts = [t.text for t in day.iter(f"{NS}text")]
    assert texts.count("UTC") == 1


@pytest.mark.parametrize(
    "points",
    [[], [empty(DAY_START + timedelta(hours=h)) for h in range(24)]],
    ids=["no points", "all empty"],
)
def test_a_response_chart_without_data_says_so(points):
    root = parse(response_time_chart(points, start=DAY_START, end=END))

    messages = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "nodata-message"]
    assert messages == ["No data in this period"]
    assert not by_series(root, "avg")
    assert "no data in this period" in root.find(f"{NS}desc").text


def test_the_response_description_gives_the_figures():
    points = day_of_points(3600)
    points[3] = empty(points[3]["t"])
    root = parse(response_time_chart(points, start=DAY_START, end=END))

    assert root.find(f"{NS}desc").text == (
        "Response time, 2026-11-20 12:00 to 2026-11-21 12:00 UTC: avg 120 ms, min 80 ms, "
        "max 300 ms, p95 250 ms; 230 checks, 23 failed; 1 of 24 intervals without a "
        "successful check."
    )


@pytest.mark.parametrize(
    ("start", "end"),
    [(END, DAY_START), (END, END), (DAY_START.replace(tzinfo=None), END)],
    ids=["reversed", "empty", "naive"],
)
def test_a_bad_range_is_refused(start, end):
    with pytest.raises(ValueError, match=r"start|end"):
        response_time_chart([], start=start, end=end)


# --- Availability ---------------------------------------------------------------------------


def test_availability_bars_are_classed_and_sized_by_uptime():
    levels = [100.0, 99.9, 99.5, 95.0, 94.9, 50.0, None, 0.0]
    buckets = [bucket(DAY_START + timedelta(hours=3 * i), u) for i, u in enumerate(levels)]
    root = parse(availability_chart(buckets, [], start=DAY_START, end=END))
    _, top, _, bottom = plot_box(root)

    bars = [r for r in root.iter(f"{NS}rect") if "bar" in r.get("class", "").split()]
    classes = [bar.get("class").split()[1] for bar in bars]
    assert classes == ["up", "up", "degraded", "degraded", "down", "down", "nodata", "down"]
    heights = [float(bar.get("height")) for bar in bars]
    assert heights[0] == pytest.approx(bottom - top, abs=0.1)
    assert heights[5] == pytest.approx((bottom - top) / 2, abs=0.1)
    assert heights[7] == 2  # all down keeps a sliver in its colour
    assert [t.get("data-value") for t in root.iter(f"{NS}text") if t.get("data-value")] == [
        "0",
        "20",
        "40",
        "60",
        "80",
        "100",
    ]


def test_incident_bands_are_clipped_to_the_range():
    buckets = [bucket(DAY_START + timedelta(hours=h), 100.0) for h in range(24)]
    incidents = [
        incident("before", DAY_START - timedelta(hours=5), DAY_START + timedelta(hours=6)),
        incident("inside", DAY_START + timedelta(hours=12), DAY_START + timedelta(hours=18)),
        incident("open", END - timedelta(hours=2), None),
        incident("gone", DAY_START - timedelta(hours=9), DAY_START - timedelta(hours=8)),
    ]
    root = parse(availability_chart(buckets, incidents, start=DAY_START, end=END))
    left, top, right, bottom = plot_box(root)
    width = right - left

    group = next(e for e in root.iter(f"{NS}g") if e.get("class") == "incidents")
    bands = {r.get("data-incident"): r for r in group}
    assert set(bands) == {"before", "inside", "open"}
    spans = {
        key: (float(r.get("x")), float(r.get("x")) + float(r.get("width")))
        for key, r in bands.items()
    }
    assert spans["before"] == pytest.approx((left, left + width / 4), abs=0.2)
    assert spans["inside"] == pytest.approx((left + width / 2, left + width * 3 / 4), abs=0.2)
    assert spans["open"] == pytest.approx((right - width / 12, right), abs=0.2)
    assert all(
        float(r.get("height")) == pytest.approx(bottom - top, abs=0.1) for r in bands.values()
    )
    assert bands["open"].find(f"{NS}title").text.endswith("ongoing: connection refused")
    assert bands["inside"].find(f"{NS}title").text == (
        "Incident from 2026-11-21 00:00 UTC to 2026-11-21 06:00 UTC (6 h): connection refused"
    )
    assert "3 incidents (1 ongoing)" in root.find(f"{NS}desc").text


def test_an_availability_chart_without_data_says_so():
    buckets = [bucket(DAY_START + timedelta(hours=h), None) for h in range(24)]
    root = parse(availability_chart(buckets, [], start=DAY_START, end=END))

    messages = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "nodata-message"]
    assert messages == ["No data in this period"]
    assert root.find(f"{NS}desc").text.endswith("no data in this period; 0 incidents.")


# --- Comparison -----------------------------------------------------------------------------


def test_comparison_overlays_each_series_with_a_distinct_style():
    series = [(f"service {i}", day_of_points(300, avg=100.0 + i)) for i in range(10)]
    root = parse(comparison_chart(series, start=DAY_START, end=END))

    lines = by_series(root, "compare")
    assert [line.get("data-label") for line in lines] == [label for label, _ in series]
    styles = {(line.get("stroke"), line.get("stroke-dasharray")) for line in lines}
    assert len(styles) == 10
    assert all(line.get("stroke-dasharray") is None for line in lines[:4])
    assert all(line.get("stroke-dasharray") for line in lines[4:])
    assert [line.get("class").split()[-1] for line in lines] == [f"series-{i}" for i in range(10)]
    legend = next(e for e in root.iter(f"{NS}g") if e.get("class") == "legend")
    assert [t.text for t in legend.iter(f"{NS}text")] == [label for label, _ in series]


def test_comparison_takes_at_most_ten_series():
    series = [(f"s{i}", []) for i in range(11)]

    with pytest.raises(ValueError, match="at most 10"):
        comparison_chart(series, start=DAY_START, end=END)


def test_a_comparison_without_data_says_so():
    root = parse(comparison_chart([("a", []), ("b", [])], start=DAY_START, end=END))

    messages = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "nodata-message"]
    assert messages == ["No data in this period"]
    assert root.find(f"{NS}desc").text.endswith("a: no data; b: no data.")


# --- Sparkline ------------------------------------------------------------------------------


def test_a_sparkline_states_its_figures():
    points = day_of_points(300)
    points[7].update(min_ms=40.0, max_ms=900.0)
    root = parse(sparkline(points))

    assert root.get("role") == "img"
    assert root.get("aria-label") == (
        "Average response time over 24 h: 120 ms (min 40 ms, max 900 ms)"
    )
    assert moves(root.find(f"{NS}path").get("d")) == 1


def test_a_sparkline_without_data_says_so():
    for points in ([], [empty(DAY_START)]):
        root = parse(sparkline(points))

        assert root.get("aria-label") == "No data"
        assert root.find(f"{NS}path") is None


@pytest.mark.timing
def test_a_sparkline_of_many_points_costs_in_proportion_to_them():
    # Its range once took min() of every point per point: a day of 30 s buckets drew in
    # ~100 ms instead of ~5. Ten times the points may cost about ten times as much, not a
    # hundred (best of five each: the machine may be busy at moments).
    few, many = day_of_points(300), day_of_points(30)

    def best(points):
        timings = []
        for _ in range(5):
            started = time.perf_counter()
            sparkline(points)
            timings.append(time.perf_counter() - started)
        return min(timings)

    assert best(many) < 30 * best(few), (best(many), best(few))


# --- Safety and accessibility ---------------------------------------------------------------


@pytest.mark.parametrize("hostile", HOSTILE)
def test_labels_and_causes_are_escaped(hostile):
    charts = [
        comparison_chart([(hostile, day_of_points(3600))], start=DAY_START, end=END, title=hostile),
        availability_chart(
            [bucket(DAY_START, 90.0)],
            [incident(hostile, DAY_START, DAY_START + timedelta(hours=1), cause=hostile)],
            start=DAY_START,
            end=END,
        ),
    ]
    compare, availability = (parse(chart) for chart in charts)

    for markup in charts:
        assert "<img" not in markup
        assert "<script" not in markup
    assert by_series(compare, "compare")[0].get("data-label") == hostile
    assert compare.find(f"{NS}title").text == hostile
    legend = next(e for e in compare.iter(f"{NS}g") if e.get("class") == "legend")
    assert [t.text for t in legend.iter(f"{NS}text")] == [hostile]
    band = next(r for r in availability.iter(f"{NS}rect") if r.get("class") == "incident")
    assert band.get("data-incident") == hostile
    assert band.find(f"{NS}title").text.endswith(f": {hostile}")


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_value_drawn_again_is_escaped_again(hostile):
    # Short attribute values are kept escaped between renders: the kept copy is escaped too.
    for _ in range(3):
        markup = comparison_chart([(hostile, day_of_points(3600))], start=DAY_START, end=END)
        assert by_series(parse(markup), "compare")[0].get("data-label") == hostile
        assert "<img" not in markup
        assert "<script" not in markup


def test_no_chart_carries_a_style_a_script_or_an_event_handler():
    charts = [*every_chart(), sparkline(day_of_points(300))]

    for markup in charts:
        for element in parse(markup).iter():
            assert element.tag not in {f"{NS}script", f"{NS}style", f"{NS}foreignObject"}
            assert "style" not in element.attrib
            assert not [name for name in element.attrib if name.lower().startswith("on")]
            assert not any("javascript:" in value for value in element.attrib.values())


def test_every_chart_is_named_and_described():
    for markup in every_chart():
        root = parse(markup)
        title_id, desc_id = root.get("aria-labelledby").split()

        assert root.get("role") == "img"
        ids = {e.get("id"): e for e in root.iter() if e.get("id")}
        assert ids[title_id].tag == f"{NS}title"
        assert ids[desc_id].tag == f"{NS}desc"
        assert ids[title_id].text
        assert len(ids[desc_id].text) > 40
        assert ids[title_id] is root.find(f"{NS}title")


def test_ids_are_unique_across_charts_on_a_page():
    ids = [
        e.get("id")
        for markup in every_chart() + every_chart()
        for e in parse(markup).iter()
        if e.get("id")
    ]

    assert len(ids) == len(set(ids)) == 18


def test_a_given_id_prefix_is_used_and_checked():
    root = parse(response_time_chart([], start=DAY_START, end=END, id_prefix="latency-api"))

    assert root.get("aria-labelledby") == "latency-api-title latency-api-desc"
    with pytest.raises(ValueError, match="id_prefix"):
        response_time_chart([], start=DAY_START, end=END, id_prefix='x" onload="alert(1)')


def unnamed(markup):
    """A chart's markup without its random id prefix."""
    return re.sub(r"chart-[0-9a-f]{12}", "chart-ID", str(markup))


SIZES = [Size(960, 280, 320), Size(320, 260, 120), Size(500, 200, 7)]


def test_a_chart_drawn_at_several_sizes_is_each_size_drawn_alone():
    """The wide and phone drawings share their bucketed data, not their markup."""
    points = day_of_points(step=300)
    points[100:103] = [empty(p["t"]) for p in points[100:103]]  # a gap
    degraded = [(DAY_START + timedelta(hours=2), DAY_START + timedelta(hours=3))]
    buckets = [
        bucket(DAY_START + timedelta(hours=h), 100.0 - h % 7, 60.0 * (h % 3)) for h in range(24)
    ]
    incidents = [incident("i1", DAY_START + timedelta(hours=5), None)]
    series = [("api", points), ("web <b>", day_of_points(step=300, avg=80.0))]
    common = {"start": DAY_START, "end": END, "since": DAY_START + timedelta(minutes=5)}

    drawn = {
        "response": response_time_charts(points, SIZES, degraded=degraded, **common),
        "availability": availability_charts(buckets, incidents, SIZES, **common),
        "comparison": comparison_charts(series, SIZES, band="locations", **common),
    }
    alone = {
        "response": [
            response_time_chart(points, **size_of(size), degraded=degraded, **common)
            for size in SIZES
        ],
        "availability": [
            availability_chart(buckets, incidents, width=size.width, height=size.height, **common)
            for size in SIZES
        ],
        "comparison": [
            comparison_chart(series, **size_of(size), band="locations", **common) for size in SIZES
        ],
    }

    assert {kind: [unnamed(m) for m in charts] for kind, charts in drawn.items()} == {
        kind: [unnamed(m) for m in charts] for kind, charts in alone.items()
    }
    assert len({len(m) for m in drawn["response"]}) == len(SIZES)  # sizes differ


def size_of(size):
    return {"width": size.width, "height": size.height, "max_columns": size.max_columns}


def test_several_sizes_take_no_shared_id_prefix():
    with pytest.raises(ValueError, match="id_prefix"):
        response_time_charts([], SIZES, start=DAY_START, end=END, id_prefix="latency")
    (one,) = availability_charts([], [], SIZES[:1], start=DAY_START, end=END, id_prefix="up")

    assert parse(one).get("id") == "up"

"""The dashboards' template filters: durations with sensible precision, no data never shown
as a perfect figure."""

import pytest

from healthmon.templatetags.healthmon import duration, pct, uptime


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (None, "—"),
        (0, "0 s"),
        (0.0004, "< 0.001 s"),
        (0.0086, "0.0086 s"),  # 99.99 % of 86 s watched: a budget, not nothing
        (0.0432, "0.043 s"),
        (0.864, "0.86 s"),
        (0.9, "0.9 s"),
        (0.96, "1 s"),
        (5.0, "5 s"),
        (52.56, "52.6 s"),
        (59.94, "59.9 s"),
        (59.96, "1 min"),  # never "60 s"
        (60, "1 min"),
        (259.2, "4 min 19 s"),
        (2_400, "40 min"),  # no "0 s"
        (2_592, "43 min 12 s"),
        (3_599.6, "1 h"),  # never "59 min 60 s"
        (31_536, "8 h 46 min"),
        (86_400, "1 d"),
        (191_000, "2 d 5 h"),
        (2_592_000, "30 d"),
    ],
)
def test_a_duration_keeps_the_precision_its_size_deserves(seconds, shown):
    assert duration(seconds) == shown


def test_minutes_of_watching_give_sla_budgets_that_are_not_zero():
    """After 10 minutes watched, the three tiers allow 0.6 s, 0.3 s and 0.06 s: shown so,
    where whole seconds said "0 s" for all three."""
    watched = 600
    allowed = [round((100 - target) / 100 * watched, 3) for target in (99.9, 99.95, 99.99)]

    assert [duration(seconds) for seconds in allowed] == ["0.6 s", "0.3 s", "0.06 s"]


def test_no_uptime_reads_no_data_yet_never_a_percentage():
    assert "No data yet" in uptime(None)
    assert "%" not in uptime(None)
    assert uptime(100.0) == pct(100.0) == "100.00 %"
    assert uptime(99.9005, 4) == "99.9005 %"
    assert uptime(0.0) == "0.00 %"  # down all the time is a figure, not "no data"

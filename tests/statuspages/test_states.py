"""The page's vocabulary: component statuses and the overall banner."""

import pytest

from statuspages.states import ComponentStatus, component_status, overall

OK = ComponentStatus.OPERATIONAL
MAJOR = ComponentStatus.MAJOR_OUTAGE


@pytest.mark.parametrize(
    ("measured", "expected"),
    [
        ("up", OK),
        ("pending", OK),
        ("paused", OK),
        ("degraded", ComponentStatus.DEGRADED_PERFORMANCE),
        ("late", ComponentStatus.DEGRADED_PERFORMANCE),
        ("down", MAJOR),
    ],
)
def test_a_measured_status_becomes_a_component_status(measured, expected):
    assert component_status(measured) == expected


def test_maintenance_hides_a_measured_outage_but_not_a_declared_one():
    assert component_status("down", in_maintenance=True) == ComponentStatus.UNDER_MAINTENANCE
    declared = component_status("up", in_maintenance=True, declared=["partial_outage"])
    assert declared == ComponentStatus.PARTIAL_OUTAGE


def test_a_declared_impact_worse_than_measured_wins():
    assert component_status("degraded", declared=["major_outage"]) == MAJOR
    assert component_status("down", declared=["degraded_performance"]) == MAJOR


@pytest.mark.parametrize(
    ("statuses", "indicator"),
    [
        ([], "none"),
        ([OK, OK], "none"),
        ([OK, ComponentStatus.UNDER_MAINTENANCE], "maintenance"),
        ([ComponentStatus.UNDER_MAINTENANCE, ComponentStatus.DEGRADED_PERFORMANCE], "minor"),
        ([OK, ComponentStatus.PARTIAL_OUTAGE], "major"),
        ([OK, MAJOR], "major"),
        ([MAJOR, MAJOR], "critical"),
    ],
)
def test_the_overall_indicator_follows_the_worst_component(statuses, indicator):
    assert overall(statuses).indicator == indicator

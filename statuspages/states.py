"""The words a status page speaks: a component's status and the page's overall indicator,
in Atlassian Statuspage's vocabulary so that tooling reading its summary.json reads ours.

One pure module shared by the page, summary.json, feeds and badges, so they never disagree.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from monitoring.models import EndpointStatus, IncidentImpact


class ComponentStatus:
    """A component's status, mildest first (the order `worst` compares by)."""

    OPERATIONAL = "operational"
    UNDER_MAINTENANCE = "under_maintenance"
    DEGRADED_PERFORMANCE = "degraded_performance"
    PARTIAL_OUTAGE = "partial_outage"
    MAJOR_OUTAGE = "major_outage"


SEVERITY = [
    ComponentStatus.OPERATIONAL,
    ComponentStatus.UNDER_MAINTENANCE,
    ComponentStatus.DEGRADED_PERFORMANCE,
    ComponentStatus.PARTIAL_OUTAGE,
    ComponentStatus.MAJOR_OUTAGE,
]

COMPONENT_LABELS = {
    ComponentStatus.OPERATIONAL: "Operational",
    ComponentStatus.UNDER_MAINTENANCE: "Under maintenance",
    ComponentStatus.DEGRADED_PERFORMANCE: "Degraded performance",
    ComponentStatus.PARTIAL_OUTAGE: "Partial outage",
    ComponentStatus.MAJOR_OUTAGE: "Major outage",
}

# What a measured status says to readers. Pending (no check yet) and paused (not watched)
# claim nothing bad: a page says "operational" rather than invent an outage.
_MEASURED: dict[str, str] = {
    EndpointStatus.UP: ComponentStatus.OPERATIONAL,
    EndpointStatus.PENDING: ComponentStatus.OPERATIONAL,
    EndpointStatus.PAUSED: ComponentStatus.OPERATIONAL,
    EndpointStatus.DEGRADED: ComponentStatus.DEGRADED_PERFORMANCE,
    EndpointStatus.LATE: ComponentStatus.DEGRADED_PERFORMANCE,
    EndpointStatus.DOWN: ComponentStatus.MAJOR_OUTAGE,
}


def worst(statuses: Iterable[str]) -> str:
    """The most severe of some component statuses (operational when there are none)."""
    return max(statuses, key=SEVERITY.index, default=ComponentStatus.OPERATIONAL)


def component_status(
    endpoint_status: str, *, in_maintenance: bool = False, declared: Iterable[str] = ()
) -> str:
    """A component's status from its endpoint's measured status, whether a maintenance
    window covers it now, and the impacts of open public incidents declared on it.

    Maintenance wins over what is measured (a planned outage is no incident), but not over
    what a person declared during it.
    """
    measured = ComponentStatus.UNDER_MAINTENANCE if in_maintenance else _MEASURED[endpoint_status]
    return worst([measured, *(_IMPACT[impact] for impact in declared)])


_IMPACT: dict[str, str] = {
    IncidentImpact.DEGRADED_PERFORMANCE: ComponentStatus.DEGRADED_PERFORMANCE,
    IncidentImpact.PARTIAL_OUTAGE: ComponentStatus.PARTIAL_OUTAGE,
    IncidentImpact.MAJOR_OUTAGE: ComponentStatus.MAJOR_OUTAGE,
}


@dataclass(frozen=True)
class Overall:
    """The page's banner: Statuspage's `indicator`, its words, and a CSS tone."""

    indicator: str  # none | minor | major | critical | maintenance
    description: str
    tone: str  # ok | minor | major | critical | maintenance


def overall(statuses: Iterable[str]) -> Overall:
    """The page's overall state from its components' statuses.

    All components in major outage is critical ("Major outage"); any major or partial outage
    is major ("Partial outage"); any degraded component is minor; maintenance shows only
    when nothing is worse.
    """
    found = list(statuses)
    top = worst(found)
    if top == ComponentStatus.MAJOR_OUTAGE and all(
        s == ComponentStatus.MAJOR_OUTAGE for s in found
    ):
        return Overall("critical", "Major outage", "critical")
    if top in (ComponentStatus.MAJOR_OUTAGE, ComponentStatus.PARTIAL_OUTAGE):
        return Overall("major", "Partial outage", "major")
    if top == ComponentStatus.DEGRADED_PERFORMANCE:
        return Overall("minor", "Degraded performance", "minor")
    if top == ComponentStatus.UNDER_MAINTENANCE:
        return Overall("maintenance", "Under maintenance", "maintenance")
    return Overall("none", "All systems operational", "ok")

"""What every report reads through: its items (endpoints, or projects standing for their
endpoints) and the selector reads of one page, made once each."""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, cast
from uuid import UUID

from accounts.models import Project
from analytics import selectors
from analytics.latency import Latency
from analytics.models import Rollup
from analytics.rows import (
    Identity,
)
from analytics.selectors import Coverage
from healthmon.intervals import Window
from monitoring.models import Endpoint

# What the reports read of an endpoint (identity, status and creation for the time watched,
# the SLA target): a page loads these, not the ~30 other columns (dates, JSON documents)
# each row would decode for nothing.
REPORT_FIELDS = ("id", "project", "name", "status", "created_at", "sla_target")


class Item(NamedTuple):
    """One row of a report: its key (an endpoint's or a project's id), what it is about,
    and the endpoints whose figures it adds up."""

    key: UUID
    identity: Identity
    endpoints: list[Endpoint]


@dataclass
class Items:
    """What a report is about: endpoints, or projects each standing for its endpoints."""

    group_by: str
    endpoints: Sequence[Endpoint]
    projects: Sequence[Project] = ()

    @property
    def endpoint_ids(self) -> list[UUID]:
        """Every endpoint involved."""
        return [endpoint.pk for endpoint in self.endpoints]

    @property
    def owners(self) -> dict[UUID, UUID]:
        """Each endpoint's item: itself, or its project."""
        if self.group_by == "endpoint":
            return {endpoint.pk: endpoint.pk for endpoint in self.endpoints}
        return {endpoint.pk: endpoint.project_id for endpoint in self.endpoints}

    def rows(self) -> list[Item]:
        """One item per row, in page order."""
        if self.group_by == "endpoint":
            return [
                Item(endpoint.pk, _endpoint_identity(endpoint), [endpoint])
                for endpoint in self.endpoints
            ]
        members: dict[UUID, list[Endpoint]] = defaultdict(list)
        for endpoint in self.endpoints:
            members[endpoint.project_id].append(endpoint)
        return [
            Item(
                project.pk, {"project": str(project.pk), "name": project.name}, members[project.pk]
            )
            for project in self.projects
        ]


class Reads:
    """The selector reads of one page, made once each: reports that need the same rows
    (a page showing a summary, SLA and availability of one window) share them.

    Coverage read for a window also answers any window inside it, clipped.
    """

    def __init__(self, items: Items, now: datetime) -> None:
        self.items, self.now = items, now
        self._latency: dict[tuple[Window, bool], dict[UUID, Latency]] = {}
        self._series: dict[
            tuple[type[Rollup], Window, bool], dict[UUID, dict[datetime, Latency]]
        ] = {}
        self._coverage: list[tuple[Window, dict[UUID, Coverage]]] = []
        self._rates: dict[Window, dict[UUID, Latency]] = {}

    def latency(self, window: Window, histograms: bool = True) -> dict[UUID, Latency]:
        """`selectors.latency` of the items over a window; rows read with histograms
        also answer a read without them."""
        for key in ((window, True), (window, histograms)):
            if key in self._latency:
                return self._latency[key]
        found = selectors.latency(self.items.owners, window, self.now, histograms=histograms)
        self._latency[window, histograms] = found
        return found

    def figures(self, windows: Sequence[Window], percentiles: Window | None = None) -> None:
        """Read the latency of several windows in one statement (`selectors.rollup_figures`)
        for `latency` and `checks` to answer; percentiles for the window `percentiles`."""
        wanted = list(dict.fromkeys([*([percentiles] if percentiles else []), *windows]))
        wanted = [
            window
            for window in wanted
            if (window, True) not in self._latency
            and (window == percentiles or (window, False) not in self._latency)
        ]
        if not wanted:
            return
        index = wanted.index(percentiles) if percentiles in wanted else None
        found = selectors.rollup_figures(self.items.owners, wanted, self.now, percentiles=index)
        for position, (window, figures) in enumerate(zip(wanted, found, strict=True)):
            self._latency[window, position == index] = figures

    def rates(self, windows: Sequence[Window]) -> list[dict[UUID, Latency]]:
        """Checks and failures per item in each window (their response-time figures
        empty): from latency already read where it was, the rest read together, their
        checks and failures only (`selectors.rollup_figures`, `rates_only`)."""
        missing = list(dict.fromkeys(w for w in windows if self._counted(w) is None))
        if missing:
            owners = self.items.owners
            read = selectors.rollup_figures(owners, missing, self.now, rates_only=True)
            self._rates.update(zip(missing, read, strict=True))
        return [cast(dict[UUID, Latency], self._counted(window)) for window in windows]

    def _counted(self, window: Window) -> dict[UUID, Latency] | None:
        """The window's rows read already, with or without their response-time figures."""
        for key in ((window, True), (window, False)):
            if key in self._latency:
                return self._latency[key]
        return self._rates.get(window)

    def checks(self, windows: Sequence[Window]) -> dict[UUID, list[int]]:
        """Checks per item in each window (`rates`)."""
        return selectors.window_counts(self.rates(windows))

    def series(
        self, tier: type[Rollup], window: Window, histograms: bool = True
    ) -> dict[UUID, dict[datetime, Latency]]:
        """`selectors.series` of the items in one tier over a window; rows read with
        histograms also answer a read without them."""
        for key in ((tier, window, True), (tier, window, histograms)):
            if key in self._series:
                return self._series[key]
        found = selectors.series(tier, self.items.owners, window, histograms=histograms)
        self._series[tier, window, histograms] = found
        return found

    def coverage(self, window: Window) -> dict[UUID, Coverage]:
        """`selectors.coverage` of the items' endpoints over a window."""
        clipped = Window(window.start, min(window.end, self.now))
        for span, covered in self._coverage:
            if span.start <= clipped.start and clipped.end <= span.end:
                return {key: found.clipped(clipped) for key, found in covered.items()}
        covered = selectors.coverage(self.items.endpoints, window, self.now)
        self._coverage.append((clipped, covered))
        return covered


def _endpoint_identity(endpoint: Endpoint) -> Identity:
    return {
        "endpoint": str(endpoint.pk),
        "name": endpoint.name,
        "project": str(endpoint.project_id),
    }

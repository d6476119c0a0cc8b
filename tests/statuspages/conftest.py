"""Factories of the status pages tests."""

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from monitoring.models import Endpoint
from statuspages.models import StatusPage
from statuspages.services import status_page_create
from statuspages.tasks import fan_out_subscriber_mails
from statuspages.validation import PageInput, SectionIn
from tests.conftest import Cast


@pytest.fixture
def make_status_page() -> Callable[..., StatusPage]:
    """A page written by the service (of the cast's organization unless told), one section
    per list of endpoints given, named `Section 0`, `Section 1`, ..."""

    def make(cast: Cast, *endpoint_lists: Sequence[Endpoint], **fields: Any) -> StatusPage:
        values: dict[str, Any] = {
            "name": "Acme status",
            "slug": "acme",
            "title": "",
            "description": "",
            "visibility": "public",
            "password": None,
            "custom_domain": None,
            "uptime_days": 90,
            "show_response_times": False,
            "sections": tuple(
                SectionIn(name=f"Section {index}", endpoints=tuple(endpoints))
                for index, endpoints in enumerate(endpoint_lists)
            ),
        }
        organization = fields.pop("organization", cast.org)
        data = PageInput(**{**values, **fields})
        return status_page_create(organization=organization, data=data)

    return make


@pytest.fixture
def run(django_capture_on_commit_callbacks: Callable[..., Any]) -> Callable[[], int]:
    """One beat of the fan-out, its send batches run (eager Celery) once it commits."""

    def once() -> int:
        with django_capture_on_commit_callbacks(execute=True):
            return fan_out_subscriber_mails.delay().get()

    return once

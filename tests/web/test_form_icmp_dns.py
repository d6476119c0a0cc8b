"""The endpoint form offers the ICMP and DNS kinds: help, a target example, their options
and an example that validates; it saves one of each."""

import json
import os

import pytest

from monitoring.models import Endpoint
from monitoring.validation import validate_config
from monitoring.views import CONFIG_EXAMPLES
from tests.web.conftest import Markup, html, visible_text


def browser_form(in_project, **changes):
    """The new-endpoint form as a browser posts it."""
    return {
        "project": str(in_project.pk),
        "name": "Gateway",
        "interval_seconds": "60",
        "timeout_seconds": "",
        "failure_threshold": "2",
        "recovery_threshold": "1",
        "sla_target": "99.9",
        "enabled": "true",
        **changes,
    }


def test_the_form_offers_both_kinds_with_help_and_examples(pages, cast):
    response = pages.as_user(cast.owner).get("/endpoints/new")

    markup = Markup(html(response))
    offered = {tag.get("value") for tag in markup.find("option")}
    assert {"icmp", "dns"} <= offered
    text = visible_text(response)
    assert "icmp://host" in text
    assert "dns://name or dns://resolver:port/name" in text
    sections = {tag.get("data-type"): tag for tag in markup.find("section")}
    for kind, options in (
        ("icmp", ["count", "max_loss_percent"]),
        ("dns", ["record_type", "expected"]),
    ):
        assert kind in sections
        example = json.loads(sections[kind]["data-example"])
        assert example == CONFIG_EXAMPLES[kind]
        assert validate_config(kind, example)
        assert all(name in text for name in options)


@pytest.mark.parametrize(
    ("kind", "target"),
    [("icmp", "icmp://gateway.example.com"), ("dns", "dns://1.1.1.1/example.com")],
)
def test_the_form_saves_one(pages, cast, kind, target):
    if kind == "icmp" and os.geteuid() != 0:
        pytest.skip("creating an ICMP endpoint needs a server that can ping (root here)")
    form = browser_form(
        cast.project, type=kind, target=target, config=json.dumps(CONFIG_EXAMPLES[kind])
    )

    response = pages.as_user(cast.owner).post("/endpoints/new", form)

    assert response.status_code == 302, visible_text(response)
    endpoint = Endpoint.objects.get()
    assert (endpoint.type, endpoint.target) == (kind, target)
    assert endpoint.config == validate_config(kind, CONFIG_EXAMPLES[kind])

"""The endpoint form offers the `tcp` and `smtp` kinds, with help, example targets and
options, and saves one of each."""

import json

import pytest

from monitoring.models import Endpoint
from monitoring.views import CONFIG_EXAMPLES, TARGET_EXAMPLES
from tests.web.conftest import Markup, html, visible_text
from tests.web.test_manage_pages import browser_form


def test_the_form_offers_tcp_and_smtp_with_an_example_target(pages, cast):
    response = pages.as_user(cast.owner).get("/endpoints/new")

    markup = Markup(html(response))
    offered = {tag["value"] for tag in markup.find("option")}
    assert {"tcp", "smtp"} <= offered
    text = visible_text(response)
    for kind in ("tcp", "smtp"):
        (section,) = [s for s in markup.find("section") if s["data-type"] == kind]
        assert json.loads(section["data-example"]) == CONFIG_EXAMPLES[kind]
        assert TARGET_EXAMPLES[kind] in text
    assert "tcp://host:port" in text
    assert "Require STARTTLS on smtp://" in text


@pytest.mark.parametrize(
    ("kind", "target", "config"),
    [
        ("tcp", "tcp://db.example.test:5432", '{"send": "PING\\r\\n", "expect": "+PONG"}'),
        ("smtp", "smtps://mail.example.test:465", '{"starttls": true}'),
    ],
)
def test_the_form_saves_a_tcp_and_an_smtp_endpoint(pages, cast, kind, target, config):
    form = browser_form(cast.project, name=kind, type=kind, target=target, config=config)

    response = pages.as_user(cast.owner).post("/endpoints/new", form)

    assert response.status_code == 302
    endpoint = Endpoint.objects.get()
    assert (endpoint.type, endpoint.target) == (kind, target)
    assert endpoint.config == {**endpoint.config, **json.loads(config)}


def test_the_form_refuses_a_tcp_target_without_a_port(pages, cast):
    form = browser_form(cast.project, type="tcp", target="tcp://db.example.test")

    response = pages.as_user(cast.owner).post("/endpoints/new", form)

    assert response.status_code == 400
    assert "A port is required" in visible_text(response)
    assert Endpoint.objects.count() == 0

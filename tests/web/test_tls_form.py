"""The endpoint form offers the `tls` kind, with its options and an example, and saves one."""

import json

from monitoring.models import Endpoint
from tests.monitoring.authority import Authority
from tests.web.test_manage_pages import browser_form


def test_the_form_offers_the_tls_kind_with_its_options(pages, cast):
    page = pages.as_user(cast.owner).get("/endpoints/new").content.decode()

    assert '<option value="tls">TLS certificate</option>' in page
    assert "tls://host:port" in page
    assert "certificate_expiry_days" in page
    assert "ca_certificate" in page


def test_the_form_saves_a_tls_endpoint_with_a_private_ca(pages, cast):
    authority = Authority()
    config = {"certificate_expiry_days": [21, "10%"], "ca_certificate": authority.pem}
    form = browser_form(
        cast.project, type="tls", target="tls://mail.example.com:993", config=json.dumps(config)
    )

    response = pages.as_user(cast.owner).post("/endpoints/new", form)

    assert response.status_code == 302, response.content
    endpoint = Endpoint.objects.get()
    assert (endpoint.type, endpoint.target) == ("tls", "tls://mail.example.com:993")
    assert endpoint.config["certificate_expiry_days"] == [21, "10%"]
    assert endpoint.config["ca_certificate"] == authority.pem.strip()


def test_the_form_names_a_bad_threshold(pages, cast):
    form = browser_form(
        cast.project,
        type="tls",
        target="tls://mail.example.com:993",
        config=json.dumps({"certificate_expiry_days": [30, "0%"]}),
    )

    response = pages.as_user(cast.owner).post("/endpoints/new", form)

    assert response.status_code == 400
    assert "certificate_expiry_days[1]" in response.content.decode()
    assert not Endpoint.objects.exists()

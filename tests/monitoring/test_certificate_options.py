"""`config.certificate_expiry_days` and `config.ca_certificate`: read on every TLS-using
kind, a bad entry a 400 naming it, nothing stored."""

import pytest

from monitoring.models import Endpoint
from monitoring.validation import validate_config
from tests.helpers import assert_problem
from tests.monitoring.authority import Authority

URL = "/api/v1/endpoints"


@pytest.fixture(scope="module")
def authority() -> Authority:
    return Authority()


def body(cast, **config):
    return {
        "project": str(cast.project.id),
        "name": "Mail certificate",
        "type": "tls",
        "target": "tls://mail.example.com:993",
        "config": config,
    }


def test_the_defaults_warn_at_30_14_7_and_1_days_with_no_private_ca():
    config = validate_config("tls", {})

    assert config["certificate_expiry_days"] == [30, 14, 7, 1]
    assert config["ca_certificate"] == ""
    assert config["verify_tls"] is True


@pytest.mark.parametrize("kind", ["http", "graphql", "grpc", "redis", "websocket", "custom"])
def test_every_tls_using_kind_takes_the_certificate_options(kind, authority):
    given = {"certificate_expiry_days": [21, "20%", "5"], "ca_certificate": authority.pem}
    config = validate_config(kind, given)

    assert config["certificate_expiry_days"] == [21, "20%", 5]
    assert config["ca_certificate"] == authority.pem.strip()


def test_a_tls_endpoint_is_created_with_its_options(api, cast, authority):
    config = {"certificate_expiry_days": [14, "10%"], "ca_certificate": authority.pem}
    response = api.as_user(cast.owner).post(URL, body(cast, **config), format="json")

    assert response.status_code == 201, response.content
    data = response.json()
    assert data["config"]["certificate_expiry_days"] == [14, "10%"]
    assert data["config"]["ca_certificate"] == authority.pem.strip()  # not a secret: shown
    assert (data["certificate_expires_at"], data["certificate_issuer"]) == (None, "")


@pytest.mark.parametrize(
    ("value", "bad"),
    [
        ([30, 0], "[1]"),
        ([30, "abc"], "[1]"),
        ([30, "100%"], "[1]"),
        ([30, 14, "0%"], "[2]"),
        ([True], "[0]"),
        ([5000], "[0]"),
        ([[7]], "[0]"),
        ("30", ""),
        (list(range(1, 12)), ""),
    ],
)
def test_a_bad_threshold_is_named_by_its_index(api, cast, value, bad):
    response = api.as_user(cast.owner).post(
        URL, body(cast, certificate_expiry_days=value), format="json"
    )

    problem = assert_problem(response, 400, "validation_error")
    assert set(problem["errors"]) == {f"config.certificate_expiry_days{bad}"}
    assert Endpoint.objects.count() == 0


def test_a_bad_ca_certificate_is_named(api, cast, authority):
    leaf, _ = authority.leaf_pem()
    for value in ("not a certificate", authority.pem[:200], leaf.decode(), 42):
        response = api.as_user(cast.owner).post(
            URL, body(cast, ca_certificate=value), format="json"
        )

        problem = assert_problem(response, 400, "validation_error")
        assert set(problem["errors"]) == {"config.ca_certificate"}, value
    assert Endpoint.objects.count() == 0


def test_a_leaf_is_refused_as_a_ca_and_a_ca_flagged_one_taken(authority):
    leaf, _ = authority.leaf_pem()
    signed_ca, _ = authority.leaf_pem(ca=True)

    with pytest.raises(Exception, match="Not a CA certificate"):
        validate_config("tls", {"ca_certificate": leaf.decode()})
    assert validate_config("tls", {"ca_certificate": signed_ca.decode()})["ca_certificate"]


@pytest.mark.parametrize(
    "target",
    ["tls://mail.example.com", "tls://mail.example.com:993/path", "tls://u@mail.example.com:993"],
)
def test_a_tls_target_is_host_and_port_only(api, cast, target):
    response = api.as_user(cast.owner).post(URL, {**body(cast), "target": target}, format="json")

    problem = assert_problem(response, 400, "validation_error")
    assert set(problem["errors"]) == {"target"}


def test_postgresql_takes_no_certificate_options(authority):
    """libpq shows no certificate to Python and reads a CA only from a file: refused, not
    silently ignored."""
    with pytest.raises(Exception, match="Unknown option"):
        validate_config("postgresql", {"ca_certificate": authority.pem})

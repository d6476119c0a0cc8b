"""The endpoint's validation in the domain: every bad option named at once, defaults filled
in, and the fields checked together; the API and page tests pin the messages."""

import pytest

from healthmon.errors import InvalidInput
from monitoring.validation import endpoint_validate, option_names, validate_config


def test_every_bad_option_is_named_at_once():
    config = {"method": "BREW", "expected_status": [200, 99], "headers": {"X": None}, "typo": 1}

    with pytest.raises(InvalidInput) as refused:
        validate_config("http", config)

    assert refused.value.status == 400
    assert refused.value.code == "validation_error"
    assert refused.value.errors == {
        "method": ['"BREW" is not a valid choice.'],
        "expected_status.1": ["Ensure this value is greater than or equal to 100."],
        "headers.X": ["This field may not be null."],
        "typo": ["Unknown option for this endpoint type."],
    }


def test_defaults_are_filled_in_in_the_kinds_order():
    assert validate_config("grpc", {"tls": "yes", "service": " health "}) == {
        "degraded_above_ms": None,
        "verify_tls": True,
        "certificate_expiry_days": [30, 14, 7, 1],
        "ca_certificate": "",
        "service": "health",
        "tls": True,
    }
    assert list(validate_config("redis", {})) == [
        "degraded_above_ms",
        "verify_tls",
        "certificate_expiry_days",
        "ca_certificate",
    ]
    assert list(validate_config("postgresql", {})) == ["degraded_above_ms", "verify_tls"]
    assert "headers" in option_names("custom")
    assert "headers" not in option_names("mysql")


@pytest.mark.parametrize("config", [None, [], "x"])
def test_a_config_that_is_not_an_object_is_refused_as_a_whole(config):
    with pytest.raises(InvalidInput) as refused:
        validate_config("http", config)

    assert list(refused.value.errors) == ["non_field_errors"]


def test_a_new_endpoints_fields_are_checked_together():
    values = {"type": "http", "target": "ftp://x", "interval_seconds": 30, "config": {"x": 1}}

    with pytest.raises(InvalidInput) as refused:
        endpoint_validate({**values, "timeout_seconds": 30}, current=None)
    assert list(refused.value.errors) == ["timeout_seconds", "target", "config.x"]

    with pytest.raises(InvalidInput) as refused:
        endpoint_validate({**values, "target": "HTTPS://example.test/"}, current=None)
    assert refused.value.errors == {"config.x": ["Unknown option for this endpoint type."]}

    valid = endpoint_validate(
        {**values, "target": "HTTPS://example.test/", "config": {}}, current=None
    )
    assert valid["target"] == "https://example.test/"
    assert valid["timeout_seconds"] == 10
    assert valid["config"]["method"] == "GET"

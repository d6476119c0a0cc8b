"""`config.degraded_above_ms`, the contract's name: the old `degraded_threshold_ms` still read
for one release, and renamed in stored configs by migration."""

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from healthmon.errors import InvalidInput
from monitoring.models import Endpoint
from monitoring.validation import validate_config
from tests.test_migrations import latest, migrate


def test_the_old_name_is_read_as_the_new_one():
    config = validate_config("postgresql", {"degraded_threshold_ms": 300})

    assert config == {"degraded_above_ms": 300, "verify_tls": True}


def test_a_bad_value_under_the_old_name_is_named_by_it():
    with pytest.raises(InvalidInput) as refused:
        validate_config("http", {"degraded_threshold_ms": 0})

    assert list(refused.value.errors) == ["degraded_threshold_ms"]


def test_both_names_at_once_are_refused():
    with pytest.raises(InvalidInput) as refused:
        validate_config("http", {"degraded_threshold_ms": 300, "degraded_above_ms": 400})

    assert refused.value.errors == {
        "degraded_threshold_ms": [
            "degraded_threshold_ms is the old name of degraded_above_ms: give one of them."
        ]
    }


def test_heartbeats_have_no_degraded_option_under_either_name():
    with pytest.raises(InvalidInput) as refused:
        validate_config("heartbeat", {"degraded_threshold_ms": 300})

    assert list(refused.value.errors) == ["degraded_threshold_ms"]


@pytest.fixture
def before_the_rename(transactional_db: None) -> Iterator[Any]:
    try:
        yield migrate([("monitoring", "0015_tcp_smtp")])
    finally:
        migrate(latest())
    assert MigrationExecutor(connection).migration_plan(latest()) == []


@pytest.mark.postgres("migrations run on the production engine")
def test_stored_configs_are_renamed_by_the_migration(before_the_rename):
    old = before_the_rename
    organization = old.get_model("accounts", "Organization").objects.create(name="Acme")
    project = old.get_model("accounts", "Project").objects.create(
        organization=organization, name="Shop"
    )
    old_endpoint = old.get_model("monitoring", "Endpoint")
    slow = old_endpoint.objects.create(
        project=project,
        name="Slow",
        type="http",
        target="https://shop.test/health",
        config={"degraded_threshold_ms": 250, "method": "GET"},
        config_masked={"degraded_threshold_ms": 250, "method": "GET"},
    )
    plain = old_endpoint.objects.create(
        project=project, name="Plain", type="redis", target="redis://cache.test/0"
    )

    migrate(latest())

    renamed = Endpoint.objects.get(pk=slow.pk)
    assert renamed.config == {"degraded_above_ms": 250, "method": "GET"}
    assert renamed.config_masked == {"degraded_above_ms": 250, "method": "GET"}
    assert Endpoint.objects.get(pk=plain.pk).config == {}

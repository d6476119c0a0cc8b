"""What a worker's batch probes: each enabled endpoint's target and config as stored now,
however many rounds the worker decrypted them before."""

import pytest
from cryptography.fernet import Fernet
from django.utils import timezone

from healthmon.encryption import DecryptionError
from monitoring.checks import checks_probe
from monitoring.checks import probe as checks
from monitoring.probes import ProbeResult
from monitoring.services import EndpointChanges, endpoint_set_enabled, endpoint_update
from monitoring.validation import validate_config


@pytest.fixture
def probed(monkeypatch):
    """The tasks each batch handed to the engine, one list per batch (nothing is sent)."""
    batches = []

    async def run_batch(tasks, concurrency):
        batches.append(tasks)
        return [ProbeResult(True, 1.0, "HTTP 200", started_at=t.not_before) for t in tasks]

    monkeypatch.setattr(checks, "run_batch", run_batch)
    return batches


def probe(*endpoints):
    now = timezone.now()
    return checks_probe(slots=[(endpoint.pk, now) for endpoint in endpoints])


def test_each_enabled_endpoint_is_probed_at_its_target_with_its_config(cast, make_endpoint, probed):
    first = make_endpoint(cast.project, target="https://a.example/health", timeout_seconds=3)
    second = make_endpoint(
        cast.project, name="B", target="https://b.example/", config={"headers": {"X-K": "v"}}
    )
    paused = make_endpoint(cast.project, name="Paused", target="https://c.example/")
    endpoint_set_enabled(endpoint=paused, enabled=False)

    outcomes = probe(second, paused, first)

    assert [o.endpoint_id for o in outcomes] == [second.pk, first.pk]
    [tasks] = probed
    assert [(t.type, t.target, t.timeout) for t in tasks] == [
        ("http", "https://b.example/", 10.0),
        ("http", "https://a.example/health", 3.0),
    ]
    assert tasks[0].config == validate_config("http", {"headers": {"X-K": "v"}})
    assert tasks[1].config == validate_config("http", {})


def test_a_new_target_and_config_are_probed_from_the_next_batch_on(cast, make_endpoint, probed):
    endpoint = make_endpoint(cast.project, target="https://old.example/")
    probe(endpoint)
    probe(endpoint)  # decrypted twice: what a worker keeps must not outlive the change

    changes = EndpointChanges(
        target="https://new.example/", config=validate_config("http", {"method": "HEAD"})
    )
    endpoint_update(endpoint=endpoint, changes=changes)
    probe(endpoint)

    assert [batch[0].target for batch in probed] == [
        "https://old.example/",
        "https://old.example/",
        "https://new.example/",
    ]
    assert probed[-1][0].config["method"] == "HEAD"


def test_a_retired_key_fails_the_batch_even_after_earlier_batches_decrypted_its_targets(
    cast, make_endpoint, probed, settings
):
    endpoint = make_endpoint(cast.project, target="https://a.example/")
    probe(endpoint)
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]

    with pytest.raises(DecryptionError, match="FIELD_ENCRYPTION_KEYS"):
        probe(endpoint)

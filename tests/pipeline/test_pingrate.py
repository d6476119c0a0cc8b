"""The per-heartbeat ping rate limit: over it, 429 with no database query."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from monitoring.models import Ping

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def beats(cast, make_endpoint):
    """Two heartbeats of the cast's project."""
    return [
        make_endpoint(cast.project, name=name, type="heartbeat", target="", failure_threshold=1)
        for name in ("backup", "import")
    ]


def ping(client, endpoint, at=T0, method="get"):
    with time_machine.travel(at, tick=False):
        return getattr(client, method)(f"/ping/{endpoint.ping_key}")


@pytest.mark.parametrize("method", ["get", "post"])
def test_past_the_rate_a_ping_is_429_with_retry_after_and_not_stored(
    client, beats, settings, method
):
    settings.PING_RATE_PER_SECOND = 5
    answers = [ping(client, beats[0], method=method) for _ in range(7)]

    assert [a.status_code for a in answers] == [200] * 5 + [429] * 2
    refused = answers[-1]
    assert refused["Content-Type"].startswith("text/plain")
    assert refused["Retry-After"] == "1"
    assert refused.content == b"too many pings"
    assert Ping.objects.count() == 5


def test_a_refused_ping_makes_no_database_query(client, beats, settings, django_assert_num_queries):
    settings.PING_RATE_PER_SECOND = 1
    assert ping(client, beats[0]).status_code == 200

    with django_assert_num_queries(0):
        assert ping(client, beats[0]).status_code == 429


def test_the_next_second_pings_pass_again(client, beats, settings):
    settings.PING_RATE_PER_SECOND = 1
    ping(client, beats[0])
    assert ping(client, beats[0], at=T0 + timedelta(milliseconds=999)).status_code == 429

    assert ping(client, beats[0], at=T0 + timedelta(seconds=1)).status_code == 200
    assert Ping.objects.count() == 2


def test_other_heartbeats_are_not_limited_by_one_over_its_rate(client, beats, settings):
    settings.PING_RATE_PER_SECOND = 2
    for _ in range(4):
        ping(client, beats[0])

    assert [ping(client, beats[1]).status_code for _ in range(2)] == [200, 200]
    assert Ping.objects.filter(endpoint=beats[1]).count() == 2


def test_a_key_spelled_in_capitals_shares_the_count(client, beats, settings):
    settings.PING_RATE_PER_SECOND = 1
    ping(client, beats[0])

    with time_machine.travel(T0, tick=False):
        response = client.get(f"/ping/{str(beats[0].ping_key).upper()}")

    assert response.status_code == 429


def test_a_rate_of_0_is_no_limit(client, beats, settings):
    settings.PING_RATE_PER_SECOND = 0

    assert {ping(client, beats[0]).status_code for _ in range(12)} == {200}


def test_the_api_is_not_limited_by_the_ping_rate(api, cast, client, beats, settings):
    settings.PING_RATE_PER_SECOND = 1
    ping(client, beats[0])
    ping(client, beats[0])

    with time_machine.travel(T0, tick=False):
        response = api.as_user(cast.owner).get(f"/api/v1/endpoints/{beats[0].id}/pings")

    assert response.status_code == 200
    assert len(response.json()["results"]) == 1

"""Check-now of an endpoint probed from several places: one round, sent to each of its
online locations and judged together, as the dispatcher sends it."""

from datetime import timedelta

from django.utils import timezone

from monitoring.locations_live import location_heartbeat
from monitoring.models import CheckResult, Endpoint, EndpointStatus
from tests.helpers import assert_problem


def listing(endpoint: Endpoint, *slugs: str) -> Endpoint:
    Endpoint.objects.filter(pk=endpoint.pk).update(locations=list(slugs))
    endpoint.refresh_from_db()
    return endpoint


def test_check_now_probes_from_every_online_location_in_one_round(
    api, cast, make_endpoint, http_peer, settings
):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    for slug in ("eu-west", "us-east"):
        location_heartbeat(slug=slug, hostname=f"worker@{slug}", now=timezone.now())
    endpoint = listing(
        make_endpoint(cast.project, target=http_peer.url("/health")), "eu-west", "us-east"
    )

    response = api.as_user(cast.member).post(f"/api/v1/endpoints/{endpoint.id}/check-now")

    assert response.status_code == 202
    checks = CheckResult.objects.filter(endpoint=endpoint)  # eager Celery ran both on commit
    assert sorted(checks.values_list("location", flat=True)) == ["eu-west", "us-east"]
    assert len({check.scheduled_for for check in checks}) == 1  # one round
    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.UP
    assert endpoint.last_round_at == checks[0].scheduled_for  # judged once, together


def test_check_now_with_every_location_offline_is_refused_and_changes_nothing(
    api, cast, make_endpoint, http_peer, settings
):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    endpoint = listing(make_endpoint(cast.project, target=http_peer.url("/health")), "eu-west")
    location_heartbeat(
        slug="eu-west", hostname="worker@eu-west", now=timezone.now() - timedelta(minutes=5)
    )

    response = api.as_user(cast.member).post(f"/api/v1/endpoints/{endpoint.id}/check-now")

    assert set(assert_problem(response, 400, "validation_error")["errors"]) == {"locations"}
    assert not CheckResult.objects.filter(endpoint=endpoint).exists()

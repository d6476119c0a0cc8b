"""`make demo`'s seed (issue 20): a demo organization with a printed login and endpoints on
the demo services; seeding again duplicates nothing."""

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command

from accounts.models import Organization, User
from healthmon import devtargets
from monitoring import demo
from monitoring.models import Endpoint, EndpointStatus

TARGETS = "http://127.0.0.1:8001"


@pytest.fixture(autouse=True)
def _development(settings):
    settings.DEBUG = True  # `make demo` runs a development server


def seed(targets=TARGETS):
    out = StringIO()
    call_command("seed_demo", targets=targets, stdout=out)
    return out.getvalue()


def test_seeding_prints_a_login_that_works(db, settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True

    printed = seed()

    assert "as demo@example.com, password healthmon-demo" in printed
    assert f"{settings.WEB_BASE_URL}/login" in printed
    assert "4 endpoint(s) created, 0 already there" in printed
    user = authenticate(email=demo.EMAIL, password=demo.PASSWORD)
    assert user is not None
    assert user.organization.name == "Demo"
    assert user.email_verified_at is not None


def test_the_demo_endpoints_probe_each_demo_service_and_are_due_at_once(db, settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True

    seed()

    endpoints = Endpoint.objects.order_by("name")
    assert {e.target for e in endpoints} == {f"{TARGETS}{path}" for path in devtargets.TARGETS}
    assert {e.status for e in endpoints} == {EndpointStatus.PENDING}
    assert all(e.next_check_at is not None for e in endpoints)


def test_seeding_twice_duplicates_nothing_and_restores_the_printed_password(db, settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    seed()
    user = User.objects.get(email=demo.EMAIL)
    user.set_password("changed-by-someone-9")
    user.save(update_fields=["password"])
    first_ids = set(Endpoint.objects.values_list("pk", flat=True))

    printed = seed()

    assert "0 endpoint(s) created, 4 already there" in printed
    assert Organization.objects.count() == 1
    assert User.objects.count() == 1
    assert set(Endpoint.objects.values_list("pk", flat=True)) == first_ids
    assert authenticate(email=demo.EMAIL, password=demo.PASSWORD) is not None


def test_another_demo_port_points_the_same_endpoints_at_it(db, settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    seed()

    seed("http://127.0.0.1:9001/")

    assert Endpoint.objects.count() == 4
    assert all(e.target.startswith("http://127.0.0.1:9001/") for e in Endpoint.objects.all())


def test_seeding_is_refused_outside_development(db, settings):
    settings.DEBUG = False

    with pytest.raises(CommandError, match="DEBUG=true"):
        seed()

    assert not User.objects.filter(email=demo.EMAIL).exists()
    assert not Organization.objects.filter(name="Demo").exists()


def test_a_real_user_with_the_demo_email_is_left_alone(db, cast, make_user):
    real = make_user(cast.org, demo.EMAIL, "owner")
    password = real.password

    with pytest.raises(CommandError, match="not to the demo"):
        seed()

    real.refresh_from_db()
    assert real.password == password
    assert not Endpoint.objects.exists()

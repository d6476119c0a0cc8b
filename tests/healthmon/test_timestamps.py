"""PostgreSQL timestamps read with the fast loader (healthmon/timestamps.py) equal what
Django's own loader reads, value for value, and the fast loader is the one in use."""

from datetime import UTC

import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import BaseTzLoader
from psycopg.adapt import Loader

from healthmon.timestamps import use_fast_timestamps

pytestmark = pytest.mark.postgres("the loader is psycopg's, for PostgreSQL's timestamptz")

VALUES = [
    "2026-11-27 03:50:45.993+00",
    "2026-11-27 03:50:45+00",
    "2026-11-27 03:50:45.123456+00",
    "2026-11-27 03:50:45.1+00",
    "2026-03-29 01:30:00+02",  # an offset: written as UTC by the server, read all the same
    "0001-01-01 00:00:00+00",
    "9999-12-31 23:59:59.999999+00",
    "2024-02-29 12:00:00.000001-07",
]


class DjangosLoader(BaseTzLoader):
    timezone = UTC


def read(sql_values, loader=None):
    with connection.cursor() as cursor:
        if loader:
            cursor.cursor.adapters.register_loader("timestamptz", loader)
        literals = ", ".join(f"'{value}'::timestamptz" for value in sql_values)
        cursor.execute(f"SELECT {literals}")
        return cursor.fetchone()


@pytest.mark.django_db
def test_the_fast_loader_reads_what_djangos_reads():
    loader = connection.connection.adapters.get_loader(1184, 0)  # timestamptz, text
    assert loader.__name__ == "UtcTimestampLoader"
    assert loader.timezone is UTC  # what Django's create_cursor compares

    fast, django = read(VALUES), read(VALUES, DjangosLoader)

    assert fast == django
    assert [value.tzinfo for value in fast] == [UTC] * len(VALUES)
    assert [value.microsecond for value in fast[:4]] == [993000, 0, 123456, 100000]


@pytest.mark.django_db
def test_what_the_fast_path_leaves_is_read_as_django_reads_it():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'infinity'::timestamptz")
        with pytest.raises(Exception) as fast:
            cursor.fetchone()
        cursor.cursor.adapters.register_loader("timestamptz", DjangosLoader)
        cursor.execute("SELECT 'infinity'::timestamptz")
        with pytest.raises(Exception) as django:
            cursor.fetchone()
    assert type(fast.value) is type(django.value)
    assert "infinity" in str(fast.value)
    bc = "0044-03-15 12:00:00+00 BC"
    with pytest.raises(Exception) as fast_bc:
        read([bc])
    with pytest.raises(Exception) as django_bc:
        read([bc], DjangosLoader)
    assert type(fast_bc.value) is type(django_bc.value)


@pytest.mark.django_db
def test_a_connection_in_another_zone_keeps_djangos_loader():
    raw = connection.connection
    before = raw.adapters.get_loader(1184, 0)
    with connection.cursor() as cursor:
        cursor.execute("SET TIME ZONE 'Europe/Paris'")
    try:
        raw.adapters.register_loader("timestamptz", DjangosLoader)
        use_fast_timestamps(None, connection)
        assert raw.adapters.get_loader(1184, 0) is DjangosLoader
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET TIME ZONE 'UTC'")
        raw.adapters.register_loader("timestamptz", before)
    assert issubclass(before, Loader)

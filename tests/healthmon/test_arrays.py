"""`healthmon.arrays`: binary arrays of fixed-size values written by one `struct` pack per
value, byte for byte what psycopg's own list dumper writes; other lists go to psycopg's."""

import math
import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from healthmon import arrays

pytestmark = pytest.mark.postgres("psycopg's binary arrays")

RNG = random.Random(26)  # noqa: S311 - reproducible test data, not secrets
LISTS = [
    [uuid.UUID(int=RNG.getrandbits(128)) for _ in range(200)],
    [uuid.uuid4(), None, uuid.uuid4()],
    [None, uuid.uuid4()],
    [True, False, None, True],
    [0, 1, -1, 32767, -32768],  # int2
    [70_000, -5, None],  # int4
    [2**40, -(2**40), 3],  # int8
    [2**70, 1],  # numeric: psycopg's
    [1.5, -0.0, math.inf, -math.inf, None, 1e-310],  # float8
    [math.nan],
    ["up", "down", None],  # text: psycopg's
    [datetime(2030, 1, 1, tzinfo=UTC) + timedelta(seconds=n) for n in range(3)],
    [[1, 2], [3, 4]],  # two dimensions: psycopg's
    [],
    [None, None],
]


def _dumped(dumper: type | None, value: list) -> bytes:
    from psycopg.adapt import AdaptersMap, PyFormat, Transformer
    from psycopg.postgres import adapters

    context = AdaptersMap(adapters)
    if dumper is not None:
        context.register_dumper(list, dumper)
    transformer = Transformer(context)
    found = transformer.get_dumper(value, PyFormat.BINARY).dump(value)
    return bytes(found) if found is not None else b""


@pytest.mark.parametrize("value", LISTS, ids=range(len(LISTS)))
def test_each_list_is_dumped_as_psycopg_dumps_it(value):
    fast = arrays._dumper()

    assert _dumped(fast, value) == _dumped(None, value)


def test_django_connections_use_it_and_postgresql_reads_the_arrays_back(db):
    from psycopg.adapt import PyFormat

    connection.ensure_connection()
    raw = connection.connection
    ids = [uuid.uuid4() for _ in range(5)] + [None]
    with raw.cursor() as cursor:
        cursor.execute(
            "SELECT %b::uuid[], %b::int8[], %b::float8[], %b::bool[]",
            [ids, [2**40, None], [0.25, None], [True, None, False]],
        )
        row = cursor.fetchone()

    assert raw.adapters.get_dumper(list, PyFormat.BINARY) is arrays._DUMPER
    assert row == (ids, [2**40, None], [0.25, None], [True, None, False])


@pytest.mark.parametrize("value", LISTS[:7] + LISTS[8:9], ids=range(8))
def test_fixed_size_kinds_take_the_fast_path(value, monkeypatch):
    from psycopg.types.array import ListBinaryDumper

    fast = arrays._dumper()
    calls = []
    original = ListBinaryDumper.dump
    monkeypatch.setattr(
        ListBinaryDumper, "dump", lambda self, obj: calls.append(obj) or original(self, obj)
    )

    _dumped(fast, value)

    assert calls == []

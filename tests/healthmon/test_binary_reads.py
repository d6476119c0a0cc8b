"""`healthmon.db.read_cursor(binary=True)`: rows read in PostgreSQL's binary format are the
rows read from text, value for value and type for type, for what such reads return (uuids,
integers of each size, floats with their edge values, sums as numeric, times, NULLs); and
the statement is still seen by Django's execute wrappers. `read_cursor(uuid_text=True)` reads
uuid columns as their text, every other column as before."""

import math
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connection

from healthmon.db import read_cursor

pytestmark = [pytest.mark.postgres("the binary format is PostgreSQL's"), pytest.mark.django_db]

STATEMENT = """
SELECT %s::uuid, n::int2, (n * 70000)::int4, (n::int8 << 40), n * 1.5::float8,
       sum(n) OVER (), (sum(n::int8) OVER ())::numeric, NULL::int4, NULL::float8,
       EXTRACT(EPOCH FROM %s::timestamptz)::int8 + n, %s::timestamptz,
       'Infinity'::float8, '-Infinity'::float8, '-0'::float8, 1e-310::float8
FROM generate_series(-2, 3) AS n
"""
NOW = datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def read(binary):
    params = [uuid.UUID(int=2**127 + 5), datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)]
    params.append(params[1])
    with read_cursor(connection, binary=binary) as cursor:
        cursor.execute(STATEMENT, params)
        result = cursor.cursor.pgresult  # psycopg's: the format the server sent
        assert [result.fformat(i) for i in range(result.nfields)] == [int(binary)] * 15
        return cursor.fetchall()


def test_binary_rows_equal_the_text_rows_value_for_value_and_type_for_type():
    text, binary = read(False), read(True)

    assert len(text) == 6
    for from_text, from_binary in zip(text, binary, strict=True):
        assert [type(v) for v in from_binary] == [type(v) for v in from_text]
        assert [repr(v) for v in from_binary] == [repr(v) for v in from_text]
    first = binary[0]
    assert first[0] == uuid.UUID(int=2**127 + 5)
    assert first[3] == -2 << 40
    assert isinstance(first[6], Decimal)
    assert first[10] == datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert math.copysign(1, first[13]) == -1.0


def test_a_binary_read_is_seen_by_djangos_execute_wrappers():
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        read(True)

    assert seen == [STATEMENT]


def test_uuid_text_reads_uuids_as_their_text_and_every_other_column_as_before():
    def rows(uuid_text):
        with read_cursor(connection, uuid_text=uuid_text) as cursor:
            cursor.execute(STATEMENT, [uuid.UUID(int=2**127 + 5), NOW, NOW])
            return cursor.fetchall()

    plain, texts = rows(False), rows(True)

    assert [row[0] for row in texts] == [str(row[0]) for row in plain]
    assert all(type(row[0]) is str for row in texts)
    assert [row[1:] for row in texts] == [row[1:] for row in plain]
    assert type(rows(False)[0][0]) is uuid.UUID  # the option stays on its own cursor

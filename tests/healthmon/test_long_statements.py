"""Long statements through `healthmon.db.read_cursor`: psycopg converts a statement's
placeholders again at every run when it is over 4 KB or has over 50 parameters (a report's
rollup statement is both); the prepared cursors keep the conversion per statement text,
and the rows stay those of Django's own cursor, whatever the parameters of each run."""

import uuid

import psycopg._queries
import pytest
from django.db import connection

from healthmon.db import read_cursor

pytestmark = [pytest.mark.postgres("the prepared cursors are PostgreSQL's"), pytest.mark.django_db]

NAMES = 70  # over psycopg's 50 parameters


def long_statement() -> str:
    """A statement of its own text (a fresh comment: no earlier run converted it), over
    4 KB, its named parameters used twice each."""
    columns = ", ".join(f"%(p{n})s::int + %(p{n})s::int AS c{n}" for n in range(NAMES))
    padding = "-- " + "x" * 4096 + "\n"
    return f"/* {uuid.uuid4()} */\n{padding}SELECT {columns}, %(tail)s::text"


def params(offset: int) -> dict[str, object]:
    return {**{f"p{n}": n + offset for n in range(NAMES)}, "tail": f"run {offset}"}


@pytest.fixture
def splits(monkeypatch):
    """How many times psycopg splits a statement into its placeholders."""
    calls = []
    split = psycopg._queries._split_query

    def counted(query, *args, **kwargs):
        calls.append(query)
        return split(query, *args, **kwargs)

    monkeypatch.setattr(psycopg._queries, "_split_query", counted)
    return calls


def test_a_long_statement_is_converted_once_and_answers_each_runs_parameters(splits):
    statement = long_statement()
    assert len(statement) > 4096

    answers = []
    for offset in (0, 1000, 7):
        with read_cursor(connection) as cursor:
            cursor.execute(statement, params(offset))
            answers.append(cursor.fetchall())

    assert len(splits) == 1  # the first run only
    for offset, rows in zip((0, 1000, 7), answers, strict=True):
        expected = (*(2 * (n + offset) for n in range(NAMES)), f"run {offset}")
        assert rows == [expected]


def test_djangos_own_cursor_splits_it_at_every_run_with_the_same_rows(splits):
    """The premise: psycopg itself keeps no conversion of such a statement."""
    statement = long_statement()
    prepared = []
    with read_cursor(connection) as cursor:
        cursor.execute(statement, params(3))
        prepared = cursor.fetchall()
    own = []
    for _ in range(2):
        with connection.cursor() as cursor:
            cursor.execute(statement, params(3))
            own = cursor.fetchall()

    assert len(splits) == 3
    assert own == prepared


def test_a_short_positional_statement_still_runs_and_is_seen_by_execute_wrappers():
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper), read_cursor(connection) as cursor:
        cursor.execute("SELECT %s::int + 1, %s::text", [41, "x"])
        assert cursor.fetchall() == [(42, "x")]
    assert seen == ["SELECT %s::int + 1, %s::text"]

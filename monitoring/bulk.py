"""Bulk writes of the check pipeline on PostgreSQL: parameters bound by the server, and
raw check rows sent by COPY.

Django's psycopg cursors interpolate parameters into the SQL text on the client: a batch's
arrays of 200 values were quoted element by element in Python, a third of a batch's CPU
(bench/README.md, ingest). A cursor made here sends them as binary parameters instead.
"""

from collections.abc import Iterable, Sequence
from typing import Any, cast

from django.db import connection, models
from django.db.models.base import ModelState

from healthmon.db import bound_cursor
from monitoring.models import CheckResult

# The columns COPY names, in order, with their PostgreSQL types: every column, `id`
# included (a UUIDv7 made by the caller), so the statement holds on a table partitioned by
# `scheduled_for` as on a plain one (COPY into a partitioned parent routes each row).
CHECK_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "uuid"),
    ("endpoint_id", "uuid"),
    ("scheduled_for", "timestamptz"),
    ("checked_at", "timestamptz"),
    ("ok", "bool"),
    ("response_time_ms", "float8"),
    ("status_detail", "text"),
    ("error", "text"),
    ("error_detail", "text"),
    ("location", "text"),
)


def loaded(model: type[models.Model], names: Sequence[str], values: Sequence[Any]) -> Any:
    """An instance of `model` as `Model.from_db` makes it from these columns (the others
    deferred), without `Model.__init__`: its per-field loop and signals were a fifth of an
    ingest batch's CPU for 200 endpoints. Only for models with no `__init__` of their own
    and no pre_init/post_init receivers (none in this project), and attribute names
    (`attname`) whose descriptors do not intercept assignment on a new instance."""
    obj = model.__new__(model)
    state = obj._state = ModelState()
    state.adding, state.db = False, connection.alias
    obj.__dict__.update(zip(names, values, strict=True))
    return obj


def checks_copy(*, rows: Iterable[Sequence[Any]]) -> None:
    """Append raw check rows, each a tuple in `CHECK_COLUMNS` order, by one binary COPY.

    No conflict can occur: the caller holds its endpoints' row locks and left out the
    slots already taken.
    """
    table = connection.ops.quote_name(CheckResult._meta.db_table)
    names = ", ".join(name for name, _ in CHECK_COLUMNS)
    with bound_cursor() as cursor:
        statement = f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)"
        with cursor.cursor.copy(statement) as copy:
            copy.set_types([kind for _, kind in CHECK_COLUMNS])
            for row in rows:
                copy.write_row(row)


def rows_update(objects: Sequence[models.Model], fields: Sequence[str]) -> None:
    """Write these columns of every object in one `UPDATE ... FROM unnest(...)`: one
    statement and one array per column, whatever the row count.

    The values go as the objects hold them (str, bool, int, float, aware datetimes, None):
    the fields must be of such plain kinds.
    """
    if not objects:
        return
    meta = type(objects[0])._meta
    quote = connection.ops.quote_name
    columns = [cast(models.Field, meta.get_field(name)) for name in fields]
    pk = meta.pk
    assert pk is not None  # noqa: S101 - every model has one
    names = [quote(str(column.column)) for column in columns]
    casts = ", ".join(f"%b::{column.cast_db_type(connection)}[]" for column in [pk, *columns])
    sql = (
        f"UPDATE {quote(meta.db_table)} AS t SET "  # noqa: S608 - model names only
        + ", ".join(f"{name} = v.{name}" for name in names)
        + f" FROM unnest({casts}) AS v({quote(str(pk.column))}, {', '.join(names)})"
        + f" WHERE t.{quote(str(pk.column))} = v.{quote(str(pk.column))}"
    )
    attnames = [pk.attname, *(column.attname for column in columns)]
    params = [[getattr(obj, name) for obj in objects] for name in attnames]
    with bound_cursor() as cursor:
        cursor.execute(sql, params)

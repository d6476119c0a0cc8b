"""Database helpers the ORM lacks."""

import abc
import functools
import json
import select
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import psycopg
from django.contrib.postgres.operations import (
    AddIndexConcurrently as AddIndexConcurrentlyOnPostgres,
)
from django.contrib.postgres.operations import (
    RemoveIndexConcurrently as RemoveIndexConcurrentlyOnPostgres,
)
from django.db import DEFAULT_DB_ALIAS, OperationalError, connections, models, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from django.db.migrations import AddIndex, RemoveIndex
from psycopg._queries import PostgresQuery, _query2pg_nocache

T = TypeVar("T")
LOCK_NOT_GRANTED = "55P03"  # PostgreSQL's lock_not_available


def _idle_and_quiet(raw: Any) -> bool:
    """Whether a psycopg connection is open, idle outside a transaction, and has nothing
    from the server waiting on its socket."""
    if raw.closed or raw.broken or raw.info.transaction_status != raw.info.transaction_status.IDLE:
        return False
    poller = select.poll()  # errors and hang-ups are reported whatever is registered
    poller.register(raw.fileno(), select.POLLIN | select.POLLPRI)
    return not poller.poll(0)


def skip_quiet_health_checks(**kwargs: Any) -> None:
    """At a request's start, count a kept PostgreSQL connection as checked when the server
    has sent nothing on it since its last answer (a `request_started` receiver, after
    Django's `close_old_connections`).

    CONN_HEALTH_CHECKS made every request that used the database send a `SELECT 1` first:
    a round trip, a fifth of the statements of an API key's endpoint list. A server that
    ends a connection (restart, `pg_terminate_backend`, an idle timeout, a pooler) sends
    an error and closes it, which leaves the socket readable: such a connection, or one
    not idle, still gets Django's `SELECT 1` and is replaced when that fails. A silent
    network failure is found by neither without a timeout (TCP_USER_TIMEOUT,
    healthmon/settings/core.py).
    """
    if not hasattr(select, "poll"):
        return
    # Django's stubs do not know the health check's attributes (Django 4.1).
    wrappers: Sequence[Any] = connections.all(initialized_only=True)
    for wrapper in wrappers:
        if (
            wrapper.vendor == "postgresql"
            and wrapper.connection is not None
            and wrapper.health_check_enabled
            and not wrapper.health_check_done
            and not wrapper.errors_occurred
            and _idle_and_quiet(wrapper.connection)
        ):
            wrapper.health_check_done = True


def lock_not_granted(exc: OperationalError) -> bool:
    """Whether PostgreSQL refused a lock that its `lock_timeout` did not see granted."""
    return getattr(exc.__cause__, "sqlstate", None) == LOCK_NOT_GRANTED


def with_lock_timeout(
    change: Callable[[], T],
    *,
    timeout: str,
    attempts: int,
    pause: Callable[[int], float],
    using: str = "default",
) -> T:
    """Run `change` in a transaction whose locks are asked for with this `lock_timeout`
    (PostgreSQL), so that a long reader never queues everyone's writes behind a waiting
    schema change; when a lock is not granted in time, try again after `pause(attempt)`
    seconds, up to `attempts` times, then raise the last refusal."""
    for attempt in range(attempts):
        try:
            with transaction.atomic(using=using), connections[using].cursor() as cursor:
                cursor.execute(f"SET LOCAL lock_timeout = '{timeout}'")
                return change()
        except OperationalError as exc:
            if not lock_not_granted(exc) or attempt == attempts - 1:
                raise
            time.sleep(pause(attempt))
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


_NEVER = 2**62

# How many statements' conversions a process keeps (`_KnownQuery`): the prepared cursors'
# statements are of fixed text, a few dozen shapes in a process. A conversion of 600
# placeholders takes about 160 KB: 20 MB at the very most.
_KNOWN_STATEMENTS = 128


@functools.lru_cache(maxsize=_KNOWN_STATEMENTS)
def _converted(query: str, encoding: str) -> Any:
    return _query2pg_nocache(query.encode(encoding), encoding)


class _KnownQuery(PostgresQuery):
    """psycopg's conversion of a statement's `%s` / `%(name)s` placeholders to `$n`, kept
    per statement text whatever its length.

    psycopg keeps it only for statements under 4 KB with at most 50 parameters (an ORM's
    INSERT of many rows would fill its cache) and splits any other statement with a
    regular expression at every run, prepared or not. A report's rollup statement is 9 KB
    of about 600 placeholders: splitting it again took a quarter of an endpoint summary's
    time in `cursor.execute` (bench/README.md). The statements run through `bound_cursor`
    are of fixed text, so keeping their conversions costs a few MB (`_KNOWN_STATEMENTS`).
    """

    __slots__ = ()

    def convert(self, query: Any, vars: Any) -> None:
        if vars is None or not isinstance(query, str):
            super().convert(query, vars)
            return
        converted = _converted(query, self._tx.encoding)
        self.query, self._want_formats, self._order, self._parts = converted
        self.dump(vars)


class _PreparedCursor(psycopg.Cursor[Any]):
    """A psycopg cursor whose statements are prepared on the server at their first run.

    Django turns psycopg's automatic preparing off (`prepare_threshold` None), so every
    statement was parsed and planned again: 3.5 ms a batch for the rollups' alone, three
    times what reading it took for an API request's credential state, and two thirds of an
    endpoint summary's database time (its rollup statement: 3.3 ms bound on the client,
    0.7 ms prepared; bench/README.md). The
    statements run here are few and of fixed text, run again and again by every process:
    psycopg keeps them prepared per connection (at most 100, least recently used first out).

    With `binary_results`, the rows come in PostgreSQL's binary format, which psycopg reads
    without parsing text: about 1.8 µs less per row of a rollup series' 44 numbers.
    """

    binary_results = False
    _query_cls = _KnownQuery

    def execute(  # same signature as psycopg's, other defaults for `prepare` and `binary`
        self,
        query: Any,
        params: Any = None,
        *,
        prepare: bool | None = True,
        binary: bool | None = None,
    ) -> "_PreparedCursor":
        binary = self.binary_results if binary is None else binary
        super().execute(query, params, prepare=prepare, binary=binary)
        return self

    def _send_query_prepared(self, name: bytes, pgq: Any, *, binary: bool | None = None) -> None:
        # psycopg keeps the statement it ran only when it ran it unprepared; Django's query
        # log (DEBUG, CaptureQueriesContext) reads it from there, and logged None instead.
        self._query = pgq
        super()._send_query_prepared(name, pgq, binary=binary)


@contextmanager
def bound_cursor(
    alias: str = DEFAULT_DB_ALIAS, *, binary: bool = False, uuid_text: bool = False
) -> Iterator[CursorWrapper]:
    """A cursor on a PostgreSQL connection whose parameters the server binds, and whose
    statements it prepares once per connection, wrapped as Django wraps its own: execute
    wrappers and the query log see its statements. `binary`: rows in the binary format,
    for statements of plain numbers, uuids and times only (Django reads JSON columns from
    text). `uuid_text`: uuid columns of text rows read as their text (`str(uuid)`'s form),
    for reads that only match them: a `UUID` hashes in Python, a `str` in C."""
    connection = connections[alias]
    # As Django's own cursors do: a connection kept from an earlier request or task is
    # checked once before its first statement (`skip_quiet_health_checks` may spare it).
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    conn = cast(psycopg.Connection[Any], connection.connection)
    if conn.prepare_threshold is None:
        # Django's default, which turns every prepare off, even one asked for: a threshold
        # no statement reaches lets these cursors prepare theirs while Django's own
        # statements stay unprepared, as before.
        conn.prepare_threshold = _NEVER
    # Django's stubs type the cursor it wraps as its own wrapper: this is psycopg's.
    raw = cast(Any, _PreparedCursor(conn))
    raw.binary_results = binary
    if uuid_text:
        raw.adapters.register_loader("uuid", psycopg.types.string.TextLoader)
    wrapped = (
        connection.make_debug_cursor(raw)
        if connection.queries_logged
        else connection.make_cursor(raw)
    )
    with wrapped:
        yield wrapped


def fetch_prepared(
    alias: str, sql: str, params: Sequence[Any], *, uuid_text: bool = False
) -> list[tuple[Any, ...]]:
    """The rows of a fixed statement (`%s` parameters) on this database: prepared once per
    connection on PostgreSQL, through Django's cursor elsewhere (SQLite; `read_cursor`,
    which says what `uuid_text` does)."""
    with read_cursor(connections[alias], uuid_text=uuid_text) as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def own_fields(model: type[models.Model]) -> list[str]:
    """Every column of the model itself, for an `only()` that adds the few related columns
    a read shows (a `select_related` row otherwise loads and decodes all of theirs)."""
    return [field.name for field in model._meta.concrete_fields]


def update_each(objects: Sequence[models.Model], fields: Sequence[str]) -> None:
    """Write these columns of each object: one UPDATE per row, sent as one executemany
    (a pipeline on psycopg 3).

    Django's bulk_update builds a CASE over every row for each column: for the hundreds of
    rows a probe batch or a dispatcher tick changes, compiling that cost more than the
    writes themselves (bench/README.md).
    """
    if not objects:
        return
    model = type(objects[0])
    connection = connections[router.db_for_write(model)]
    meta, quote = model._meta, connection.ops.quote_name
    columns = [cast(models.Field, meta.get_field(name)) for name in fields]
    assignments = ", ".join(f"{quote(str(column.column))} = %s" for column in columns)
    table, pk = quote(meta.db_table), quote(str(meta.pk.column))
    sql = f"UPDATE {table} SET {assignments} WHERE {pk} = %s"  # noqa: S608 - quoted names only
    rows = [
        [column.get_db_prep_save(getattr(obj, column.attname), connection) for column in columns]
        + [meta.pk.get_db_prep_value(obj.pk, connection)]
        for obj in objects
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def read_cursor(
    using: BaseDatabaseWrapper, *, binary: bool = False, uuid_text: bool = False
) -> Any:
    """A cursor for a read of fixed text on this connection: prepared on PostgreSQL
    (`bound_cursor`, its rows in the binary format or its uuids as text when asked),
    Django's own elsewhere. Parameters as Django takes them (`%s` or `%(name)s`)."""
    if using.vendor == "postgresql":
        return bound_cursor(using.alias, binary=binary, uuid_text=uuid_text)
    return using.cursor()


class Rows(abc.ABC):
    """A list that is read a window at a time, as pagination reads a QuerySet: `rows[a:b]`
    reads those rows, `count()` counts them all."""

    @abc.abstractmethod
    def __getitem__(self, window: slice) -> list[Any]:
        """The rows from `window.start` up to `window.stop`."""

    @abc.abstractmethod
    def count(self) -> int:
        """How many rows there are."""


def _column(field: Any) -> str:
    """The database column of a concrete field."""
    return str(cast(models.Field, field).column)


def _json_value(value: Any) -> Any:
    """What `JSONField.from_db_value` makes of a column's value, for a field without a
    decoder of its own: the decoded document, or the value as it came when not JSON."""
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _value_converter(converters: list[Any], expression: Any, connection: Any) -> Any:
    """One function of the value doing what the ORM's `converters` of a column do."""
    if len(converters) == 1:
        (converter,) = converters
        field = getattr(converter, "__self__", None)
        if (
            getattr(converter, "__func__", None) is models.JSONField.from_db_value
            and getattr(field, "decoder", True) is None
        ):
            return _json_value  # the same, without the ORM's call per value (~3 µs)

    def convert(value: Any) -> Any:
        for converter in converters:
            value = converter(value, expression, connection)
        return value

    return convert


@functools.cache
def _row_reader(
    model: type[models.Model], fields: tuple[str, ...], column: str, alias: str
) -> tuple[str, str, tuple[tuple[int, Any], ...]]:
    """What `ColumnRows` runs on the database `alias`: the head of its page statement (the
    columns, the table), its ordering, and the ORM's converters of those columns (by
    position, each one function of the value)."""
    connection = connections[alias]
    meta, quote = model._meta, connection.ops.quote_name
    names = ", ".join(quote(_column(meta.get_field(name))) for name in fields)
    head = f"SELECT {names} FROM {quote(meta.db_table)} WHERE {quote(column)} IN "  # noqa: S608
    order = ", ".join(
        quote(_column(meta.get_field(str(name).lstrip("-"))))
        + (" DESC" if str(name).startswith("-") else " ASC")
        for name in meta.ordering or ()
    )
    compiler = model._default_manager.values(*fields).query.get_compiler(using=alias)
    compiler.setup_query()
    converters = compiler.get_converters([expression for expression, _, _ in compiler.select])
    by_position = tuple(
        (position, _value_converter(functions, expression, connection))
        for position, (functions, expression) in sorted(converters.items())
    )
    return head, order, by_position


class ColumnRows(Rows):
    """`model.objects.filter(<field>__in=values).values(*fields)` in the model's ordering, read
    with a statement built once per process, its values converted by the ORM's own converters.

    Building that queryset and compiling it cost ~1 ms of CPU per read, more than the read.
    """

    def __init__(
        self, model: type[models.Model], fields: Sequence[str], field: str, values: Sequence[Any]
    ) -> None:
        self._model, self._fields, self._values = model, tuple(fields), list(values)
        self._field = cast(models.Field, model._meta.get_field(field))
        self._alias = router.db_for_read(model)

    def _where(self) -> tuple[str, list[Any]]:
        connection = connections[self._alias]
        target = cast(models.Field, getattr(self._field, "target_field", self._field))
        params = [target.get_db_prep_value(value, connection) for value in self._values]
        return "(" + ", ".join(["%s"] * len(params)) + ")", params

    def __getitem__(self, window: slice) -> list[dict[str, Any]]:
        """The rows of the window as dicts, as `.values()` gives them."""
        start, stop = window.start or 0, window.stop
        if not self._values or stop is None or stop <= start:
            return []
        head, order, converters = _row_reader(
            self._model, self._fields, _column(self._field), self._alias
        )
        values, params = self._where()
        sql = f"{head}{values} ORDER BY {order} LIMIT %s OFFSET %s"
        with connections[self._alias].cursor() as cursor:
            cursor.execute(sql, [*params, stop - start, start])
            rows = cursor.fetchall()
        fields, read = self._fields, []
        for row in rows:
            item = dict(zip(fields, row, strict=True))
            for position, convert in converters:
                name = fields[position]
                item[name] = convert(item[name])
            read.append(item)
        return read

    def count(self) -> int:
        """How many rows match, by `COUNT(*)`."""
        if not self._values:
            return 0
        meta, connection = self._model._meta, connections[self._alias]
        quote = connection.ops.quote_name
        values, params = self._where()
        sql = (
            f"SELECT COUNT(*) FROM {quote(meta.db_table)} "  # noqa: S608 - quoted names only
            f"WHERE {quote(_column(self._field))} IN {values}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return int(cursor.fetchone()[0])


class _ConcurrentlyOnPostgres:
    """An index operation run CONCURRENTLY on PostgreSQL (in a migration with `atomic =
    False`, so that writes are not blocked) and as its plain operation elsewhere (SQLite)."""

    plain: Any  # the operation SQLite runs instead

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        """Concurrently on PostgreSQL only."""
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)  # type: ignore[misc]
        else:
            self.plain.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        """Concurrently on PostgreSQL only."""
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)  # type: ignore[misc]
        else:
            self.plain.database_backwards(self, app_label, schema_editor, from_state, to_state)


class AddIndexConcurrently(_ConcurrentlyOnPostgres, AddIndexConcurrentlyOnPostgres):
    """Build an index without blocking writes on PostgreSQL (CREATE INDEX CONCURRENTLY); a
    plain CREATE INDEX elsewhere (SQLite)."""

    plain = AddIndex


class RemoveIndexConcurrently(_ConcurrentlyOnPostgres, RemoveIndexConcurrentlyOnPostgres):
    """Drop an index without blocking writes on PostgreSQL (DROP INDEX CONCURRENTLY); a plain
    DROP INDEX elsewhere (SQLite)."""

    plain = RemoveIndex

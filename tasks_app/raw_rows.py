"""Model instances from rows of hand-written SQL, converted as the ORM converts them.

For the few statements on the hottest paths (every API call's authentication, every
reward batch), where compiling a queryset cost more Python than the rest of the work:
the statement is written once a process, and its rows become ordinary instances.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from django.db import connection


def placeholders(count: int) -> str:
    """`%s, %s, ...`: the parameter marks of an IN list of `count` values."""
    return ", ".join(["%s"] * count)


def one_of(column: str, values: Iterable[Any]) -> tuple[str, list[Any]]:
    """`column IN (values)` as (SQL, its parameters). On PostgreSQL one array parameter,
    `column = ANY(%s)`: the statement's text is then the same for any number of values,
    so it stays prepared (hot_cursor) and psycopg converts it once, not at every call
    (a long list of marks it parsed anew each time). Elsewhere a mark a value."""
    values = list(values)
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s)", [values]
    return f"{column} IN ({placeholders(len(values))})", values


@contextmanager
def hot_cursor() -> Iterator[Any]:
    """A Django cursor whose statements PostgreSQL keeps prepared on the connection once
    they have run a few times (psycopg's prepare_threshold, settings.py), for statements
    run on every request or chunk: the server planned each of them anew, 0.1-0.7 ms a
    statement, about a third of its time on a reward batch's statements.

    Django's own cursors bind parameters client-side and are never prepared; this one
    binds them server-side (psycopg's plain Cursor) on the same connection, inside the
    same Django wrapper (errors translated, queries logged, transactions as they are).
    Its statements must be ones PostgreSQL can type: a parameter whose type the server
    cannot infer needs a cast. Elsewhere (SQLite, prepared statements off) it is a
    plain cursor."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and connection.connection.prepare_threshold is not None:
            from django.db.backends.postgresql.base import ServerBindingCursor

            client_side, cursor.cursor = cursor.cursor, ServerBindingCursor(connection.connection)
            client_side.close()
        yield cursor


def fetch_rows(sql: str, params: list[Any] | tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with hot_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def fetch_row(sql: str, params: list[Any] | tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    with hot_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def _fields(model: type, names: tuple[str, ...] | None) -> list[Any]:
    """The named fields (default: all concrete ones) in the model's field order, the
    order Model.from_db reads a partial row in, whatever order they are named in."""
    return [f for f in model._meta.concrete_fields if names is None or f.name in names or f.attname in names]


def column_list(model: type, alias: str, fields: tuple[str, ...] | None = None) -> str:
    """`alias.col, ...` for `fields` of `model` (default: every concrete field), in order."""
    return ", ".join(f"{alias}.{connection.ops.quote_name(f.column)}" for f in _fields(model, fields))


def column_count(model: type) -> int:
    return len(model._meta.concrete_fields)


@cache
def _readers(model: type, fields: tuple[str, ...] | None) -> tuple[list[str], list[tuple[Any, list[Any]]]]:
    """The attribute names of `fields`, and each column with the converters the ORM
    applies to its raw values (JSON decoded; SQLite's datetimes, booleans and UUIDs parsed)."""
    columns = []
    for field in _fields(model, fields):
        column = field.get_col(model._meta.db_table)
        columns.append((column, connection.ops.get_db_converters(column) + column.get_db_converters(connection)))
    return [f.attname for f in _fields(model, fields)], columns


def instance_from_row(model: type, values: tuple | list, fields: tuple[str, ...] | None = None) -> Any:
    """An instance of `model` from the values of `column_list(model, ..., fields)`, as if
    loaded (with `.only(*fields)` when fields are named: the others load on access)."""
    names, columns = _readers(model, fields)
    converted = []
    for (column, converters), value in zip(columns, values, strict=True):
        for convert in converters:
            value = convert(value, column, connection)
        converted.append(value)
    return model.from_db(connection.alias, names, converted)

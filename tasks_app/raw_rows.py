"""Model instances from rows of hand-written SQL, converted as the ORM converts them.

For the few statements on the hottest paths (every API call's authentication, every
reward batch), where compiling a queryset cost more Python than the rest of the work:
the statement is written once a process, and its rows become ordinary instances.
The helpers serve trainer_bridge's statements too (trainer_bridge/services/reward_rows.py);
tasks_app's own statement, the token lookup, is at the bottom.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection

from tasks_app.models import ApiToken
from tasks_app.roles import ROLES


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


# -- the token lookup: every API call authenticates (tasks_app/api/auth.py) ---------------


@cache
def _lookup_statement() -> str:
    """The token, its user and the user's roles in one statement: one row per role
    held (one with no role when none is). Written out once a process: every API call
    authenticates, and the ORM spent ~1 ms of Python compiling the two queries this
    replaces (the token with its user, then the roles) on each."""
    user_model = get_user_model()
    memberships = user_model.groups.through._meta.db_table
    roles = placeholders(len(ROLES))
    return (f"SELECT {column_list(ApiToken, 't')}, {column_list(user_model, 'u')}, g.name "  # noqa: S608 - no user input in the SQL text
            f"FROM {ApiToken._meta.db_table} t JOIN {user_model._meta.db_table} u ON u.id = t.user_id "
            f"LEFT JOIN {memberships} m ON m.user_id = u.id "
            f"LEFT JOIN {Group._meta.db_table} g ON g.id = m.group_id AND g.name IN ({roles}) "
            "WHERE t.key_hash = %s")  # fmt: skip


def token_with_user(key_hash: str) -> ApiToken | None:
    """The token stored under `key_hash` with its user attached and the user's roles
    cached on it (as tasks_app.roles.user_roles would find them), or None."""
    rows = fetch_rows(_lookup_statement(), [*ROLES, key_hash])
    if not rows:
        return None
    user_model = get_user_model()
    split = column_count(ApiToken)
    token = instance_from_row(ApiToken, rows[0][:split])
    user = instance_from_row(user_model, rows[0][split : split + column_count(user_model)])
    held = frozenset(row[-1] for row in rows if row[-1] is not None)
    user._platform_roles = frozenset(ROLES) if user.is_superuser else held
    token.user = user
    return token

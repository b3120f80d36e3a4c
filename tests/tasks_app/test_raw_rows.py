"""The hot-path cursor: prepared on PostgreSQL once a statement repeats, and otherwise
a Django cursor like any other (errors translated, transactions as they are)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from tasks_app.models import ApiToken
from tasks_app.raw_rows import fetch_row, hot_cursor

pytestmark = pytest.mark.django_db


def _prepared() -> list[str]:
    with connection.cursor() as cursor:  # Django's own cursor: never prepared itself
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.postgres  # prepared statements are PostgreSQL's
def test_a_repeated_statement_is_prepared_on_postgresql():
    sql = "SELECT COUNT(*) FROM tasks_app_apitoken WHERE key_hash = %s AND id > %s"
    for n in range(8):
        assert fetch_row(sql, [f"no-such-hash-{n}", 0]) == (0,)
    assert any("tasks_app_apitoken WHERE key_hash = $1" in statement for statement in _prepared())


@pytest.mark.postgres
def test_prepared_statements_can_be_turned_off():
    connection.ensure_connection()
    threshold = connection.connection.prepare_threshold
    connection.connection.prepare_threshold = None  # what DATABASE_PREPARED_STATEMENTS=0 sets
    try:
        sql = "SELECT COUNT(*) FROM tasks_app_apitoken WHERE prefix = %s"
        for n in range(8):
            assert fetch_row(sql, [f"p{n}"]) == (0,)
        assert not any("tasks_app_apitoken WHERE prefix" in statement for statement in _prepared())
    finally:
        connection.connection.prepare_threshold = threshold


def test_errors_are_djangos_and_roll_back_as_usual(curator):
    token = ApiToken.objects.create(user=curator, name="t", prefix="abc", key_hash="h" * 64, scopes=["read"])
    columns = "id, user_id, name, prefix, key_hash, scopes, created_at"
    sql = f"INSERT INTO tasks_app_apitoken ({columns}) SELECT {columns} FROM tasks_app_apitoken WHERE id = %s"  # noqa: S608
    with pytest.raises(IntegrityError), transaction.atomic(), hot_cursor() as cursor:
        cursor.execute(sql, [token.pk])
    assert ApiToken.objects.count() == 1
    with hot_cursor() as cursor:  # the connection is still usable
        cursor.execute("SELECT name FROM tasks_app_apitoken WHERE id = %s", [token.pk])
        assert cursor.fetchone() == ("t",)

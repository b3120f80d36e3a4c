"""The statements every execution makes, as plain SQL.

A verification of all HumanEval makes some 8,000 executions, and each one reads
its row, claims it, records its outcome and counts itself done. Through the ORM
each of those statements cost 0.6-1 ms of query compilation on a 2-core host,
CPU taken from the sandboxes beside it: a fifth of what orchestration added to
the raw sandbox engine (bench/verify.py). Here each is one parameterised
statement. Values still go through Django's own field adaptation
(`get_db_prep_save`), so JSON, datetimes and time zones are stored exactly as the
ORM stores them, on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection

from evaluation.models import Execution, Verification

# What running an execution needs; the rest of the row loads on first use.
_RUN_FIELDS = ("id", "verification_id", "role", "subject", "code", "repeat", "seed", "status", "attempts")


def _table(model: Any) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _column(model: Any, name: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(name).column)


def _prepared(model: Any, name: str, value: Any) -> Any:
    return model._meta.get_field(name).get_db_prep_save(value, connection)


def execution_fetch(execution_id: int) -> Execution:
    """The execution's row, as a model instance with the fields a run needs loaded.
    Raises Execution.DoesNotExist like `get`."""
    columns = ", ".join(_column(Execution, name) for name in _RUN_FIELDS)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {_table(Execution)} WHERE id = %s", [execution_id])  # noqa: S608
        row = cursor.fetchone()
    if row is None:
        raise Execution.DoesNotExist(f"no execution {execution_id}")
    return Execution.from_db(connection.alias, list(_RUN_FIELDS), row)


def execution_claim(execution_id: int, *, now: datetime, stale: datetime, worker: str) -> bool:
    """Take the execution if it is pending, failed by the sandbox, or held by a claim
    older than `stale` (its worker died): one conditional UPDATE, so two workers
    never both take it. True if this call took it."""
    status, started, by, attempts = (_column(Execution, n) for n in ("status", "started_at", "worker", "attempts"))
    when, before = _prepared(Execution, "started_at", now), _prepared(Execution, "started_at", stale)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {_table(Execution)} SET {status} = %s, {started} = %s, {by} = %s, "  # noqa: S608
            f"{attempts} = {attempts} + 1 WHERE id = %s "
            f"AND ({status} IN (%s, %s) OR ({status} = %s AND {started} < %s))",
            ["running", when, worker, execution_id, "pending", "sandbox_error", "running", before],
        )
        return cursor.rowcount == 1


def execution_record(execution_id: int, outcome: dict[str, Any]) -> bool:
    """Write `outcome` (field name -> value) onto the execution if it is still
    running. True if it was written."""
    names = sorted(outcome)
    assignments = ", ".join(f"{_column(Execution, name)} = %s" for name in names)
    params = [_prepared(Execution, name, outcome[name]) for name in names]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {_table(Execution)} SET {assignments} WHERE id = %s AND {_column(Execution, 'status')} = %s",  # noqa: S608
            [*params, execution_id, "running"],
        )
        return cursor.rowcount == 1


def verification_count_done(verification_id: int) -> None:
    done = _column(Verification, "done")
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {_table(Verification)} SET {done} = {done} + 1 WHERE id = %s", [verification_id])  # noqa: S608

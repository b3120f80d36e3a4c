"""trainer_bridge's hand-written SQL: the statements of the reward path, and the job a
token is bound to (read on every reward batch a job's token sends).

Why not the ORM: these run on every reward request and every chunk a worker runs,
and compiling the equivalent querysets cost more Python than the rest of the work
(~0.7 ms for a batch's create, ~4 ms for bulk_create of 16 items, ~3 ms a verdict for
bulk_update, ~1.5 ms for the batch-finishing Exists, ~1 ms for a waiting request's
read). Each statement here is written once; on PostgreSQL they run on
tasks_app.raw_rows.hot_cursor, so the server keeps them prepared.

One dialect where PostgreSQL and SQLite (`make run`) both accept it. The branches
left are PostgreSQL's own: an array parameter (`= ANY`, `unnest`) keeps a
statement's text the same for any number of rows, so it stays prepared, where a mark
a value would make a new statement for every batch size; SQLite has no arrays. And
the admission lock is an advisory lock, which SQLite has no need of (its
transactions hold the whole database's write lock).
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import cache
from typing import Any, Protocol

from django.db import connection, transaction
from django.utils import timezone

from tasks_app.models import TaskVersion
from tasks_app.raw_rows import column_count, column_list, fetch_row, fetch_rows, hot_cursor, instance_from_row, one_of
from trainer_bridge.models import Pool, RewardBatch, RewardItem, Snapshot, SnapshotMember, TrainingJob

# (id, index, batch_id, version_id, code, batch seed, batch reward_mode) of a claimed item.
ClaimedRow = tuple[int, int, Any, int, str, int, str]


class Verdict(Protocol):
    """What reward_verdicts_write reads of an item (reward_runs.Claimed)."""

    pk: int
    status: str
    reward: float | None
    tests_passed: int
    tests_total: int
    result: dict[str, Any]
    wall_s: float | None
    cpu_s: float | None
    finished_at: Any


# -- submitting ------------------------------------------------------------------------------


def snapshot_hashes_held(snapshot_id: int, hashes: list[str]) -> set[str]:
    """Which of `hashes` the snapshot holds (asked on every batch a job's token sends)."""
    among, params = one_of("content_hash", hashes)
    sql = f"SELECT DISTINCT content_hash FROM {SnapshotMember._meta.db_table} WHERE snapshot_id = %s AND {among}"  # noqa: S608 - no user input in the SQL text
    return {row[0] for row in fetch_rows(sql, [snapshot_id, *params])}


def versions_with_hashes(hashes: list[str], fields: tuple[str, ...]) -> list[TaskVersion]:
    """A version, with `fields` loaded, for each of `hashes` that some version has
    (several versions may share content: any will do, the same content runs the same;
    every one found is returned). Written out: the queryset's compilation cost more
    Python than the lookup."""
    among, params = one_of("v.content_hash", hashes)
    sql = f"SELECT {column_list(TaskVersion, 'v', fields)} FROM {TaskVersion._meta.db_table} v WHERE {among}"  # noqa: S608 - no user input in the SQL text
    return [instance_from_row(TaskVersion, row, fields) for row in fetch_rows(sql, params)]


def reward_items_in_flight() -> int:
    """Completions waiting for a sandbox or running (an index on status answers it)."""
    sql = f"SELECT COUNT(*) FROM {RewardItem._meta.db_table} WHERE status IN ('pending', 'running')"  # noqa: S608 - no user input
    return fetch_row(sql)[0]


def reward_batch_by_key(user_id: Any, key: str) -> RewardBatch | None:
    """The user's batch stored under idempotency key `key` (unique per user), if any."""
    sql = (f"SELECT {column_list(RewardBatch, 'b')} FROM {RewardBatch._meta.db_table} b "  # noqa: S608 - no user input in the SQL text
           "WHERE b.user_id = %s AND b.idempotency_key = %s")  # fmt: skip
    row = fetch_row(sql, [user_id, key])
    return None if row is None else instance_from_row(RewardBatch, row)


# Submitters count what is in flight and insert under this lock, one at a time: two
# batches counted side by side would both fit and together pass the limit.
ADMISSION_LOCK = 0x7245_7761_7264  # any constant of our own: pg_advisory_xact_lock's key


def reward_admission_lock() -> None:
    """On PostgreSQL, take the admission lock, held to the end of the caller's
    transaction. Nothing on SQLite: there the transaction itself holds the database's
    write lock (IMMEDIATE)."""
    if connection.vendor == "postgresql":
        with hot_cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ADMISSION_LOCK])


def reward_batch_insert(batch: RewardBatch) -> None:
    """The batch's row (the ORM's create cost ~0.7 ms of Python a request)."""
    table, ops = RewardBatch._meta.db_table, connection.ops
    sql = (f"INSERT INTO {table} (id, user_id, job_id, idempotency_key, body_digest, reward_mode, seed, size, "  # noqa: S608 - no user input in the SQL text
           "created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)")  # fmt: skip
    params = [RewardBatch._meta.pk.get_db_prep_value(batch.pk, connection), batch.user_id, batch.job_id,
              batch.idempotency_key, batch.body_digest, batch.reward_mode, batch.seed, batch.size,
              ops.adapt_datetimefield_value(batch.created_at)]  # fmt: skip
    with hot_cursor() as cursor:
        cursor.execute(sql, params)


def reward_items_insert(batch: RewardBatch, rows: list[tuple[Any, ...]], now: datetime) -> list[int]:
    """A batch's items, `rows` of (index, client_id, version_id, code, code_digest), queued
    at `now`: one multi-row INSERT ... RETURNING id (the ORM's bulk_create spent ~4 ms of
    Python on 16 rows, a fifth of a request). Returns the new ids in index order.

    On PostgreSQL the rows go as one array a column (unnest): the same statement for any
    batch size, kept prepared, where a mark a value (112 for 16 rows) was converted anew
    at every request. SQLite has no arrays: a mark a value there."""
    table = RewardItem._meta.db_table
    batch_id = RewardBatch._meta.pk.get_db_prep_value(batch.pk, connection)
    queued = connection.ops.adapt_datetimefield_value(now)
    columns = (f"batch_id, {connection.ops.quote_name('index')}, client_id, version_id, code, code_digest, status, "
               "tests_passed, tests_total, worker, tries, queued_at")  # fmt: skip
    if connection.vendor == "postgresql":
        sql = (f"INSERT INTO {table} ({columns}) SELECT %s, u.n, u.client_id, u.version_id, u.code, u.digest, "  # noqa: S608 - no user input in the SQL text
               "'pending', 0, 0, '', 0, %s "
               "FROM unnest(%s::integer[], %s::text[], %s::bigint[], %s::text[], %s::text[]) "
               "AS u(n, client_id, version_id, code, digest) ORDER BY u.n RETURNING id")  # fmt: skip
        params: list[Any] = [batch_id, queued, *(list(column) for column in zip(*rows, strict=True))]
    else:
        marks = ", ".join(["(%s, %s, %s, %s, %s, %s, 'pending', 0, 0, '', 0, %s)"] * len(rows))
        sql = f"INSERT INTO {table} ({columns}) VALUES {marks} RETURNING id"  # noqa: S608 - no user input in the SQL text
        params = []
        for index, client_id, version_id, code, code_digest in rows:
            params += [batch_id, index, client_id, version_id, code, code_digest, queued]
    with hot_cursor() as cursor:
        cursor.execute(sql, params)
        ids = [row[0] for row in cursor.fetchall()]
    return sorted(ids)  # inserted in index order, so ascending ids are index order


# -- running (the worker's side) ----------------------------------------------------------------


def reward_items_claim(item_ids: list[int], *, worker: str, now: datetime, stale: datetime) -> list[ClaimedRow]:
    """Mark running, for `worker`, those of the items that are pending or whose claim is
    older than `stale`; return the rows this call won (see ClaimedRow), in no order. One
    statement: the batch's seed and reward mode come back with each row."""
    table, batches = RewardItem._meta.db_table, RewardBatch._meta.db_table
    among, ids = one_of("id", item_ids)
    sql = (f"UPDATE {table} SET status = 'running', started_at = %s, worker = %s, tries = tries + 1 "  # noqa: S608 - no user input in the SQL text
           f"WHERE {among} AND (status = 'pending' OR (status = 'running' AND started_at < %s)) "
           f"RETURNING id, {connection.ops.quote_name('index')}, batch_id, version_id, code, "
           f"(SELECT seed FROM {batches} b WHERE b.id = batch_id), "
           f"(SELECT reward_mode FROM {batches} b WHERE b.id = batch_id)")  # fmt: skip
    with hot_cursor() as cursor:
        cursor.execute(sql, [now, worker, *ids, stale])
        return cursor.fetchall()


def reward_verdicts_write(items: list[Verdict]) -> None:
    """Write each item's verdict over its row if the row is still `running`.

    On PostgreSQL every verdict goes in one UPDATE ... FROM unnest(columns): one
    statement for the server to run instead of one a row, with the same text and nine
    parameters (one array a column) for any number of rows, so it stays prepared.
    Elsewhere one statement a row, sent together (executemany), in one transaction.
    Django's bulk_update builds a CASE per column per row: ~3 ms of Python a verdict,
    more than running most of them."""
    if not items:
        return
    if connection.vendor == "postgresql":
        _verdicts_write_postgresql(items)
        return
    ops = connection.ops
    table = RewardItem._meta.db_table
    sql = (f"UPDATE {table} SET status = %s, reward = %s, tests_passed = %s, tests_total = %s, "  # noqa: S608 - no user input in the SQL text
           "result = %s, wall_s = %s, cpu_s = %s, finished_at = %s WHERE id = %s AND status = 'running'")  # fmt: skip
    rows = [
        (item.status, item.reward, item.tests_passed, item.tests_total, ops.adapt_json_value(item.result, None),
         item.wall_s, item.cpu_s, ops.adapt_datetimefield_value(item.finished_at), item.pk)
        for item in items
    ]  # fmt: skip
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def _verdicts_write_postgresql(items: list[Verdict]) -> None:
    table = RewardItem._meta.db_table
    columns: list[list[Any]] = [[] for _ in range(9)]
    for item in items:
        row = (item.pk, item.status, item.reward, item.tests_passed, item.tests_total, json.dumps(item.result),
               item.wall_s, item.cpu_s, item.finished_at)  # fmt: skip
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    sql = (f"UPDATE {table} AS r SET status = v.status, reward = v.reward, tests_passed = v.passed, "  # noqa: S608 - no user input in the SQL text
           "tests_total = v.total, result = v.result, wall_s = v.wall_s, cpu_s = v.cpu_s, finished_at = v.finished "
           "FROM unnest(%s::bigint[], %s::text[], %s::double precision[], %s::integer[], %s::integer[], %s::jsonb[], "
           "%s::double precision[], %s::double precision[], %s::timestamptz[]) "
           "AS v(id, status, reward, passed, total, result, wall_s, cpu_s, finished) "
           "WHERE r.id = v.id AND r.status = 'running'")  # fmt: skip
    with hot_cursor() as cursor:
        cursor.execute(sql, columns)


def reward_batches_finish(batch_ids: set[Any]) -> None:
    """Mark finished, now, the batches none of whose items still waits: one statement
    (the ORM spent ~1.5 ms compiling its Exists, a tenth of a chunk's bookkeeping)."""
    if not batch_ids:
        return
    batches, items = RewardBatch._meta.db_table, RewardItem._meta.db_table
    key = RewardBatch._meta.pk
    among, ids = one_of("id", (key.get_db_prep_value(b, connection) for b in sorted(batch_ids, key=str)))
    waiting = f"SELECT 1 FROM {items} i WHERE i.batch_id = {batches}.id AND i.finished_at IS NULL"  # noqa: S608 - no user input
    sql = (f"UPDATE {batches} SET finished_at = %s WHERE {among} AND finished_at IS NULL "  # noqa: S608 - no user input
           f"AND NOT EXISTS ({waiting})")  # fmt: skip
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with hot_cursor() as cursor:
        cursor.execute(sql, [now, *ids])


# -- answering ----------------------------------------------------------------------------------


BODY_FIELDS = ("index", "client_id", "version__content_hash", "status", "reward", "tests_passed", "tests_total",
               "result", "wall_s", "cpu_s", "queued_at", "started_at", "finished_at")  # fmt: skip


def reward_body_rows(batch: RewardBatch) -> list[dict[str, Any]]:
    """The batch's items as the answer needs them (BODY_FIELDS), in index order. On
    PostgreSQL the statement is written out: a waiting request looks at least once a
    batch, and the ORM spent ~1 ms of the web process compiling this query each time.
    On SQLite the ORM's query, which converts its text datetimes back as it reads."""
    if connection.vendor != "postgresql":
        return list(batch.items.order_by("index").values(*BODY_FIELDS))
    items, versions = RewardItem._meta.db_table, TaskVersion._meta.db_table
    sql = (f'SELECT i."index", i.client_id, v.content_hash, i.status, i.reward, i.tests_passed, i.tests_total, '  # noqa: S608 - no user input in the SQL text
           f"i.result, i.wall_s, i.cpu_s, i.queued_at, i.started_at, i.finished_at FROM {items} i "
           f'JOIN {versions} v ON v.id = i.version_id WHERE i.batch_id = %s ORDER BY i."index"')  # fmt: skip
    with hot_cursor() as cursor:
        cursor.execute(sql, [batch.pk])
        rows = [dict(zip(BODY_FIELDS, row, strict=True)) for row in cursor.fetchall()]
    for row in rows:  # jsonb comes back as text (Django's adapters), as JSONField would decode it
        if isinstance(row["result"], str):
            row["result"] = json.loads(row["result"])
    return rows


# -- the job a token is bound to -----------------------------------------------------------------


@cache
def _job_statement() -> str:
    """Written out once a process: a job's token asks for every reward batch with it,
    and the ORM's select_related compiled afresh each time."""
    jobs, snapshots, pools = TrainingJob._meta.db_table, Snapshot._meta.db_table, Pool._meta.db_table
    return (f"SELECT {column_list(TrainingJob, 'j')}, {column_list(Snapshot, 's')}, {column_list(Pool, 'p')} "  # noqa: S608 - no user input in the SQL text
            f"FROM {jobs} j JOIN {snapshots} s ON s.id = j.snapshot_id JOIN {pools} p ON p.id = s.pool_id "
            "WHERE j.token_id = %s")  # fmt: skip


def job_with_snapshot_by_token(token_id: int) -> TrainingJob | None:
    """The job bound to token `token_id`, with its snapshot and the snapshot's pool
    attached, or None."""
    row = fetch_row(_job_statement(), [token_id])
    if row is None:
        return None
    first, second = column_count(TrainingJob), column_count(TrainingJob) + column_count(Snapshot)
    job = instance_from_row(TrainingJob, row[:first])
    job.snapshot = instance_from_row(Snapshot, row[first:second])
    job.snapshot.pool = instance_from_row(Pool, row[second:])
    return job

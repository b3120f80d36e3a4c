"""How fast a snapshot streams out of GET .../export, and in how much memory.

A synthetic catalogue of approved tasks (one version each, content hashes that
are real SHA-256 digests) is written straight into a throwaway PostgreSQL
database, and snapshots of 10,000 and 100,000 members are frozen over it.
Each measurement then runs in a fresh subprocess, so its peak RSS is its own:
one GET through Django's request handler (test client: middleware, token
auth, the view, its streaming generator), the body read to the end and
dropped. The token has the `export:tests` scope, so rows carry hidden tests
(the heaviest records).

Figures (last line one JSON object, ratios first):
- jsonl_over_fetch_100k, parquet_over_fetch_100k: the export's time over the
  floor of reading the same columns of the same members, as the JSON Lines
  export reads them, in a process of its own (no HTTP, no records, no encoding).
- export_rows_per_s_jsonl / _parquet: rows per second at 100,000 members
  (goal for JSONL >= 20,000), with the 10k and 100k figures beside them.
- export_peak_rss_mb: the largest peak RSS of any export (goal <= 300 MB),
  and rss_growth_10k_to_100k_mb: how much more the 100k export peaks at than
  the 10k one of the same format, the worse format (goal: about 0, flat).

The database is created under a name of its own on the server DATABASE_URL
names (unset: the local PostgreSQL that platform/scripts/ensure-services.sh
makes sure of) and dropped at the end.
Usage: .venv/bin/python bench/export.py [--sizes 10000,100000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# Before Django reads its settings: PostgreSQL, as deployed (the embedded SQLite
# default would measure something else), started here if need be; and DEBUG off,
# which keeps every SQL statement in memory, growing with the snapshot.
if not os.environ.get("DATABASE_URL"):
    os.environ["DATABASE_URL"] = subprocess.run(
        ["bash", str(ROOT / "platform" / "scripts" / "ensure-services.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()
os.environ["DJANGO_DEBUG"] = "0"
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

FORMATS = ("jsonl", "parquet")
BATCH = 5_000  # rows per bulk_create


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# --- the catalogue -----------------------------------------------------------


def _version_fields(i: int) -> dict:
    """One synthetic version: a statement of a few hundred characters, a handful of
    visible and hidden assertions, about the size of a HumanEval task."""
    name = f"solve_{i}"
    statement = (
        f"Task {i}. Given a list of integers `xs` and an integer `k`, return the sum of the "
        f"{i % 7 + 1} largest values of xs that are divisible by k, or -1 when fewer exist. "
        "The list may be empty and may hold negative numbers; k is never zero. "
        "Write an efficient solution: xs can hold up to 10^5 values. " * (1 + i % 3)
    )
    visible = [f"assert {name}([{i}, {i + 1}, {i + 2}], 1) == {3 * i + 3}", f"assert {name}([], 2) == -1"]
    hidden = [f"assert {name}([{j}, {j * 2}, -{j}], {j % 5 + 1}) is not None" for j in range(i % 5 + 6)]
    starter = f"def {name}(xs: list[int], k: int) -> int:\n    ...\n" if i % 2 else ""
    content = json.dumps([statement, visible, hidden, starter, name])
    return {
        "number": 1,
        "statement": statement,
        "entry_point": name,
        "starter_code": starter,
        "suite_kind": "assertions",
        "test_setup": "import math" if i % 4 == 0 else "",
        "visible_tests": visible,
        "hidden_tests": hidden,
        "time_limit_s": 5.0,
        "memory_limit_mb": 256,
        "content_hash": hashlib.sha256(content.encode()).hexdigest(),
    }


def build_catalogue(total: int) -> Any:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db.models import OuterRef, Subquery

    from tasks_app.models import State, Task, TaskVersion

    owner = get_user_model().objects.create_user("bench-curator", password="bench-password-1")  # noqa: S106
    for start in range(0, total, BATCH):
        stop = min(start + BATCH, total)
        tasks = Task.objects.bulk_create(
            Task(slug=f"task-{i:06d}", title=f"Task {i}", owner=owner, state=State.APPROVED) for i in range(start, stop)
        )
        TaskVersion.objects.bulk_create(
            TaskVersion(task=task, author=owner, **_version_fields(i)) for i, task in enumerate(tasks, start)
        )
    first = Subquery(TaskVersion.objects.filter(task_id=OuterRef("pk")).values("pk")[:1])
    Task.objects.update(latest_version_id=first, approved_version_id=first)
    # A curator exports any snapshot; a trainer only those of its jobs, one query more.
    owner.groups.add(Group.objects.get(name="curator"))
    return owner


def freeze(size: int) -> tuple[str, str]:
    """A snapshot of the first `size` tasks in slug order, as snapshot_create writes it
    (minus the candidate scan, which is not what this bench measures)."""
    from tasks_app.models import Task
    from trainer_bridge.models import Pool, Snapshot, SnapshotMember
    from trainer_bridge.services.pools import snapshot_hash

    pool = Pool.objects.create(slug=f"bench-{size}", title=f"Bench {size}", criteria={})
    rows = list(
        Task.objects.order_by("slug").values_list("pk", "approved_version_id", "approved_version__content_hash")[:size]
    )
    snapshot = Snapshot.objects.create(pool=pool, hash=snapshot_hash({}, [h for _, _, h in rows]), criteria={},
                                       size=len(rows))  # fmt: skip
    bands = ("TOO_EASY", "LEARNABLE", "TOO_HARD", "unknown")
    for start in range(0, len(rows), BATCH):
        SnapshotMember.objects.bulk_create(
            SnapshotMember(snapshot=snapshot, position=n, task_id=task_id, version_id=version_id, content_hash=digest,
                           band=bands[n % 4], difficulty=None if n % 4 == 3 else (n % 100) / 25 - 2,
                           difficulty_source="" if n % 4 == 3 else "measured", reward_noise=(n % 10) / 100,
                           tags=["arithmetic", "lists"] if n % 2 else ["sorting"])
            for n, (task_id, version_id, digest) in enumerate(rows[start : start + BATCH], start)
        )  # fmt: skip
    return pool.slug, snapshot.hash


def settle() -> None:
    """VACUUM ANALYZE what was just written, as autovacuum would have long since done
    in a database in use: else the first export pays for setting the new rows'
    visibility hints, and the planner works from empty statistics."""
    from tasks_app.models import Task, TaskVersion
    from trainer_bridge.models import SnapshotMember

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for model in (Task, TaskVersion, SnapshotMember):
            cursor.execute(f"VACUUM ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


# --- one measurement, in a process of its own -----------------------------------


def child(mode: str, slug: str, digest: str, size: int) -> dict:
    """Run one export (or the bare fetch) and report its rate and this process's peak RSS."""
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse

    from trainer_bridge import export
    from trainer_bridge.models import Snapshot

    setup_test_environment()  # lets the test client's host through ALLOWED_HOSTS
    url = reverse("api-snapshot-export", args=[slug, digest])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {os.environ['BENCH_TOKEN']}")
    # A server has served requests before this one: the same request answered 304
    # (If-None-Match) goes through the whole stack (URLconf, middleware, token auth,
    # the view) without exporting, and takes the first request's imports. secure:
    # as behind production's TLS proxy (else SECURE_SSL_REDIRECT answers 301).
    assert client.get(url, secure=True, HTTP_IF_NONE_MATCH=f'"{digest}"').status_code == 304
    if mode == "parquet":
        import pyarrow.parquet  # noqa: F401 - likewise imported by the first Parquet export

    rss_before = peak_rss_mb()
    started = time.perf_counter()
    if mode == "fetch":
        snapshot = Snapshot.objects.get(hash=digest)
        rows = sum(1 for _ in export.member_rows(snapshot, with_hidden_tests=True, json_as_text=True))
        nbytes = 0  # nothing is encoded
    else:
        response = client.get(f"{url}?format={mode}", secure=True)
        assert response.status_code == 200, response.status_code
        nbytes = newlines = 0
        head = tail = b""
        for chunk in response.streaming_content:  # read to the end and dropped: a /dev/null client
            nbytes += len(chunk)
            newlines += chunk.count(b"\n")
            head = head or chunk[:4]
            tail = (tail + chunk[-4:])[-4:]
        response.close()
        if mode == "jsonl":
            rows = newlines
        else:
            assert head == tail == b"PAR1", "not a Parquet file"
            rows = size
    elapsed = time.perf_counter() - started
    assert rows == size, (mode, rows, size)
    return {"mode": mode, "size": size, "seconds": elapsed, "rows_per_s": size / elapsed, "bytes": nbytes,
            "rss_before_mb": rss_before, "peak_rss_mb": peak_rss_mb()}  # fmt: skip


def measure(mode: str, slug: str, digest: str, size: int, database_url: str, token: str) -> dict:
    env = {**os.environ, "DATABASE_URL": database_url, "BENCH_TOKEN": token}
    argv = [sys.executable, __file__, "--child", mode, "--slug", slug, "--digest", digest, "--size", str(size)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode:
        raise RuntimeError(f"{mode} {size}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--child", choices=(*FORMATS, "fetch"))
    parser.add_argument("--slug")
    parser.add_argument("--digest")
    parser.add_argument("--size", type=int)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.slug, args.digest, args.size)))
        return

    from django.test.utils import setup_test_environment

    from tasks_app.services import api_token_create

    sizes = [int(s) for s in args.sizes.split(",")]
    if connection.vendor != "postgresql":
        say(f"warning: measuring on {connection.vendor}; `make bench-export` uses PostgreSQL")
    setup_test_environment()
    # A name of our own: a concurrent test run's test_<db> is left alone.
    connection.settings_dict["TEST"]["NAME"] = f"bench_export_{os.getpid()}"
    base_url = os.environ.get("DATABASE_URL", "")
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    results: list[dict] = []
    try:
        database_url = urlsplit(base_url)._replace(path="/" + connection.settings_dict["NAME"]).geturl()
        started = time.perf_counter()
        curator = build_catalogue(max(sizes))
        snapshots = {size: freeze(size) for size in sizes}
        settle()
        say(f"catalogue of {max(sizes):,} tasks and snapshots {sizes} written in {time.perf_counter() - started:.0f} s")
        token = api_token_create(user=curator, name="bench", scopes=["read", "export", "export:tests"]).secret
        connection.close()  # the children read; this process holds nothing open meanwhile
        for size in sizes:
            for mode in ("fetch", *FORMATS):
                result = measure(mode, *snapshots[size], size, database_url, token)
                results.append(result)
                say(f"{mode:>8} {size:>7,} rows: {result['rows_per_s']:>9,.0f} rows/s, "
                    f"{result['bytes'] / 2**20:7.1f} MiB out, peak RSS {result['peak_rss_mb']:.0f} MB "
                    f"(before the request {result['rss_before_mb']:.0f} MB)")  # fmt: skip
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)

    def get(mode: str, size: int) -> dict:
        return next(r for r in results if r["mode"] == mode and r["size"] == size)

    small, large = min(sizes), max(sizes)
    figures: dict = {"bench": "export"}
    for mode in FORMATS:
        figures[f"{mode}_over_fetch_{large // 1000}k"] = round(
            get(mode, large)["seconds"] / get("fetch", large)["seconds"], 2
        )
    for mode in FORMATS:
        figures[f"export_rows_per_s_{mode}"] = round(get(mode, large)["rows_per_s"])
    figures["export_peak_rss_mb"] = round(max(r["peak_rss_mb"] for r in results if r["mode"] in FORMATS), 1)
    figures[f"rss_growth_{small // 1000}k_to_{large // 1000}k_mb"] = round(
        max(get(mode, large)["peak_rss_mb"] - get(mode, small)["peak_rss_mb"] for mode in FORMATS), 1
    )
    for mode in FORMATS:
        for size in sizes:
            figures[f"export_rows_per_s_{mode}_{size // 1000}k"] = round(get(mode, size)["rows_per_s"])
            figures[f"export_peak_rss_mb_{mode}_{size // 1000}k"] = round(get(mode, size)["peak_rss_mb"], 1)
    figures[f"fetch_rows_per_s_{large // 1000}k"] = round(get("fetch", large)["rows_per_s"])
    figures["database"] = connection.vendor
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

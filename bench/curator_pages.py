"""How fast the curator's day is: importing a real data set and serving the pages.

Each figure is a ratio against a baseline measured in the same run, so the
machine's speed cancels out:
- import_over_parse: importing HumanEval (164 tasks: validate, hash, write
  versions, solutions, transitions) over the floor of merely decompressing,
  decoding and ast-parsing the same file.
- list_page_over_bare_query: rendering the task list page (search box,
  filters, counts, 25 rows) over fetching the same 25 rows' columns with one
  bare query.
- detail_page_over_bare_query: likewise for a task's detail page.
Query counts per page are absolute (they do not depend on the machine).

Runs on a throwaway test database of the configured kind (DATABASE_URL, or
embedded SQLite). Usage: .venv/bin/python bench/curator_pages.py [--repeat N]
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Group  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402

from tasks_app.datasets import humaneval_path  # noqa: E402

DATASET = humaneval_path()


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def parse_floor(data: bytes) -> None:
    for line in gzip.decompress(data).decode("utf-8").splitlines():
        row = json.loads(line)
        ast.parse(row["prompt"] + row["canonical_solution"])
        ast.parse(row["test"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    from tasks_app.importers import tasks_import
    from tasks_app.models import Task

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        user = get_user_model().objects.create_user("bench", password="bench-password-1")  # noqa: S106
        user.groups.add(Group.objects.get(name="curator"))
        data = DATASET.read_bytes()

        start = time.perf_counter()
        report = tasks_import(actor=user, data=data)
        import_s = time.perf_counter() - start
        assert report.created == 164, report.summary()
        floor_s = best_of(3, lambda: parse_floor(data))

        client = Client()
        client.force_login(user)
        slug = Task.objects.order_by("slug").values_list("slug", flat=True)[0]

        def list_page() -> None:
            assert client.get("/?sort=slug").status_code == 200

        def detail_page() -> None:
            assert client.get(f"/t/{slug}/").status_code == 200

        def bare_list() -> None:
            list(Task.objects.order_by("slug").values_list("slug", "title", "state", "updated_at")[:25])

        def bare_detail() -> None:
            Task.objects.filter(slug=slug).values_list("latest_version__statement", flat=True).get()

        list_page(), detail_page()  # warm template and URL caches
        with CaptureQueriesContext(connection) as list_queries:
            list_page()
        with CaptureQueriesContext(connection) as detail_queries:
            detail_page()
        list_s, bare_list_s = best_of(args.repeat, list_page), best_of(args.repeat, bare_list)
        detail_s, bare_detail_s = best_of(args.repeat, detail_page), best_of(args.repeat, bare_detail)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)

    print(f"database: {connection.vendor}")
    print(f"import HumanEval (164 tasks): {import_s * 1000:.0f} ms; parse floor {floor_s * 1000:.0f} ms")
    print(
        f"task list page: {list_s * 1000:.1f} ms, {len(list_queries)} queries; bare query {bare_list_s * 1000:.2f} ms"
    )
    detail_ms, bare_detail_ms = detail_s * 1000, bare_detail_s * 1000
    print(f"detail page: {detail_ms:.1f} ms, {len(detail_queries)} queries; bare query {bare_detail_ms:.2f} ms")
    figures = {
        "bench": "curator_pages",
        "import_over_parse": round(import_s / floor_s, 2),
        "list_page_over_bare_query": round(list_s / bare_list_s, 2),
        "detail_page_over_bare_query": round(detail_s / bare_detail_s, 2),
        "list_page_queries": len(list_queries),
        "detail_page_queries": len(detail_queries),
        "import_ms": round(import_s * 1000),
        "list_page_ms": round(list_s * 1000, 1),
        "tasks": 164,
        "database": connection.vendor,
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

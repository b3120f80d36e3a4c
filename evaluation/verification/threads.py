"""Running a list of jobs on a few threads of this process (manage.py verify --sync,
the audit, ingesting samples without a broker)."""

from __future__ import annotations

from collections.abc import Callable
from queue import Queue
from threading import Thread
from typing import Any


def run_on_threads(
    items: list[Any], job: Callable[[Any], None], *, workers: int, progress: Callable[[int, int], None] | None = None
) -> None:
    """Call `job(item)` for every item on `workers` threads, in the order given.

    Each thread keeps one database connection for all its jobs and closes it when
    it ends (a connection per job cost a reconnect each time). An exception from
    a job does not stop the others; the first one is raised once all have run.
    `progress(done, total)` is called on this thread as jobs end.
    """
    from django.db import connection, connections

    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        # The tests' database without DATABASE_URL: its shared cache locks whole
        # tables across connections, which no busy timeout waits out. One thread.
        workers = 1
    queue: Queue[Any] = Queue()
    ended: Queue[BaseException | None] = Queue()
    stop = object()

    def work() -> None:
        try:
            while (item := queue.get()) is not stop:
                try:
                    job(item)
                except BaseException as exc:
                    ended.put(exc)
                    continue
                ended.put(None)
        finally:
            connections.close_all()

    threads = [Thread(target=work, daemon=True) for _ in range(max(1, workers))]
    for item in items:
        queue.put(item)
    for thread in threads:
        queue.put(stop)
        thread.start()
    failure: BaseException | None = None
    for done in range(1, len(items) + 1):
        failure = failure or ended.get()
        if progress is not None:
            progress(done, len(items))
    for thread in threads:
        thread.join()
    if failure is not None:
        raise failure

"""Real Celery worker processes on a real Redis broker, for the pipeline tests.

Each worker is started in a session of its own (`start_new_session=True`), so its
process group holds the worker, its prefork child and nothing else: stopping or
killing a worker signals that group only, never anything this process did not start.
(Sandboxes are `bwrap --die-with-parent --new-session`: they die with the child.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CELERY = Path(sys.executable).with_name("celery")
# Another database for a second test run beside this one (TEST_REDIS_DB): each flushes its own.
REDIS_DB = int(os.environ.get("TEST_REDIS_DB", "5"))
REDIS_URL = f"redis://127.0.0.1:6379/{REDIS_DB}"
# Short, so messages a killed worker held unacknowledged come back within a test.
VISIBILITY_TIMEOUT_S = 15


def database_url(settings_dict: dict[str, Any]) -> str:
    """postgres://USER[:PASSWORD]@HOST:PORT/NAME of the database Django is connected to
    (inside a test: pytest-django's test database)."""
    user = settings_dict.get("USER") or "postgres"
    password = settings_dict.get("PASSWORD") or ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    credentials = f"{user}:{password}" if password else user
    return f"postgres://{credentials}@{host}:{port}/{settings_dict['NAME']}"


def flush_broker() -> None:
    """Empty the tests' Redis database (and only that one)."""
    import redis

    from tests.components import require

    require("redis")
    client = redis.Redis(host="127.0.0.1", port=6379, db=REDIS_DB)
    try:
        client.flushdb()
    finally:
        client.close()


def unacked_task_ids(task_name: str) -> list[Any]:
    """The first argument of every `task_name` message the broker holds as delivered but
    not acknowledged (kombu's Redis transport keeps them in the `unacked` hash)."""
    import json

    import redis

    client = redis.Redis(host="127.0.0.1", port=6379, db=REDIS_DB)
    try:
        raw = client.hvals("unacked")
    finally:
        client.close()
    found = []
    for item in raw:
        message = json.loads(item)[0]
        if message.get("headers", {}).get("task") == task_name:
            found.append(message["headers"].get("argsrepr"))
    return found


@dataclass
class Worker:
    name: str
    process: subprocess.Popen
    log_path: Path
    started_at: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def ready(self) -> bool:
        return f"{self.name} ready." in self.log()

    def alive(self) -> bool:
        return self.process.poll() is None

    def _exited(self) -> bool:
        """Whether the main process has exited, without reaping it: while it is an
        unreaped zombie its pid (our process group's id) cannot be given to another
        process, so signalling the group afterwards cannot reach a stranger."""
        if self.process.returncode is not None:
            return True
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    def _signal_group(self, signum: int) -> None:
        if self.process.returncode is not None:
            return  # reaped: the group id may now belong to someone else
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signum)

    def kill(self) -> None:
        """SIGKILL the worker's whole process group: the worker dies mid-task, as on a
        host crash, and acknowledges nothing."""
        self._signal_group(signal.SIGKILL)
        self.process.wait(timeout=30)

    def request_stop(self) -> None:
        """Ask for a warm shutdown: SIGTERM to the main process, which finishes the task
        in hand and gives its reserved messages back to the broker."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)

    def stop(self, timeout: float = 30.0) -> bool:
        """Warm shutdown, then SIGKILL whatever is left of the group. True when the
        warm shutdown finished within `timeout` (False: the group had to be killed)."""
        warm = True
        if self.process.returncode is None:
            self.request_stop()
            deadline = time.monotonic() + timeout
            while not self._exited() and time.monotonic() < deadline:
                time.sleep(0.1)
            warm = self._exited()
            self._signal_group(signal.SIGKILL)  # the prefork child, if it outlived the main process
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        return warm


def start_worker(name: str, *, env: dict[str, str], log_dir: Path, pool: str = "prefork") -> Worker:
    """`celery -A config worker -Q celery,sandbox --concurrency 1 -n NAME` (with `pool`
    "threads": two task threads sharing one sandbox pool), logging to a file."""
    log_path = log_dir / f"{name.replace('@', '-at-')}.log"
    log_file = log_path.open("wb")
    concurrency = "2" if pool == "threads" else "1"
    command = [
        str(CELERY), "-A", "config", "worker", "--pool", pool,
        "-Q", "celery,sandbox", "--concurrency", concurrency, "-n", name,
        "--loglevel", "INFO", "--without-mingle", "--without-gossip",
    ]  # fmt: skip
    try:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        log_file.close()  # the child holds its own copy
    return Worker(name=name, process=process, log_path=log_path)


def wait_for(condition: Callable[[], Any], *, timeout: float, what: str, every: float = 0.2) -> Any:
    """Poll `condition` until it returns something true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


@dataclass
class WorkerPool:
    """Workers started for one test; `close()` stops every one of them."""

    base_env: dict[str, str]
    log_dir: Path
    workers: list[Worker] = field(default_factory=list)

    def start(self, *names: str, ready_within: float = 90.0, pool: str = "prefork", **env: str) -> list[Worker]:
        started = [self._start(name, env, pool) for name in names]
        for worker in started:

            def ready(w: Worker = worker) -> bool:
                if not w.alive():
                    raise AssertionError(f"worker {w.name} exited with {w.process.returncode}:\n{w.log()[-4000:]}")
                return w.ready()

            wait_for(ready, timeout=ready_within, what=f"worker {worker.name} to be ready")
        return started

    def _start(self, name: str, env: dict[str, str], pool: str = "prefork") -> Worker:
        worker = start_worker(name, env={**self.base_env, **env}, log_dir=self.log_dir, pool=pool)
        self.workers.append(worker)
        return worker

    def logs(self, tail: int = 3000) -> str:
        return "\n".join(f"--- {w.name} (pid {w.pid}) ---\n{w.log()[-tail:]}" for w in self.workers)

    def stop(self, *workers: Worker) -> bool:
        """Stop these workers (default: all) side by side; True when every one shut down warm."""
        chosen = workers or tuple(self.workers)
        for worker in chosen:
            worker.request_stop()
        return all([worker.stop() for worker in chosen])

    def close(self) -> None:
        self.stop()


@contextlib.contextmanager
def producer_on(app: Any, broker_url: str, transport_options: dict[str, Any]) -> Iterator[Any]:
    """Point this process's Celery app at `broker_url` for the block.

    Django settings (and so `app.conf`) were read at start-up with the test run's
    environment, so setting CELERY_BROKER_URL now would change nothing: the app's
    configuration is changed instead, and the connection and producer pools it
    caches (built on first use for the old URL) are dropped, before and after.
    """
    keys = ("broker_url", "broker_transport_options", "broker_transport")
    saved = {key: app.conf[key] for key in keys}
    app.conf.broker_url = broker_url
    app.conf.broker_transport_options = transport_options
    # The transport class settings.py chose for its own broker (the filesystem one's,
    # config/kombu_internals.py) would override the URL's scheme: follow the URL.
    filesystem = broker_url.startswith("filesystem://")
    app.conf.broker_transport = "config.kombu_internals:FilesystemTransport" if filesystem else None
    _drop_pools(app)
    try:
        yield app
    finally:
        _drop_pools(app)
        for key, value in saved.items():
            app.conf[key] = value


def _drop_pools(app: Any) -> None:
    """Forget the app's cached pools; the next publish builds them for the current URL.
    Not closed: kombu keeps pools in a registry keyed by connection, so a closed one
    would be handed out again for the same URL ("Acquire on closed pool")."""
    app._pool = None
    amqp = app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None

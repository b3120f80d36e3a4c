"""What the benchmarks that need a live platform share: a throwaway PostgreSQL
database, a Redis database emptied before and after, and gunicorn and a Celery
worker started in process groups of their own (stopping one signals nothing
else)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORES = os.cpu_count() or 1


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def server_url() -> str:
    """The local PostgreSQL (started if needed) as ensure-services.sh reports it."""
    out = subprocess.run(["bash", str(ROOT / "platform/scripts/ensure-services.sh")], capture_output=True, text=True,
                         check=True)  # fmt: skip
    return out.stdout.strip().splitlines()[-1]


def platform_env(database_url: str, redis_url: str, scratch: Path) -> dict[str, str]:
    """Settings for this process and the platform's processes: as deployed (no DEBUG,
    which keeps every SQL statement in memory), over plain HTTP, no throttling of rewards."""
    return {
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": redis_url,
        "LOG_LEVEL": "WARNING",
        "DJANGO_DEBUG": "0",
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "VERIFY_ON_SUBMIT": "0",
        "SANDBOX_BACKEND": "bwrap",
        "SANDBOX_REPLAY_DIR": str(scratch / "replay"),
        "THROTTLE_REWARDS": "100000/min",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }


def system_busy_s() -> float:
    """CPU seconds the whole machine has spent busy since boot (all but idle and iowait),
    from /proc/stat: the difference over a phase, against its wall time times CORES,
    says how saturated the machine was, by us or by anyone else sharing it."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    busy = sum(int(v) for v in fields) - int(fields[3]) - int(fields[4])
    return busy / os.sysconf("SC_CLK_TCK")


def admin_sql(base_url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(statement)


def flush_redis(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(command: list[str], log: Path, **env: str) -> subprocess.Popen:
    # A session of its own: stopping it signals its process group, nothing else.
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=ROOT, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def wait_until(check, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def start_worker(processes: list[subprocess.Popen], scratch: Path, *, name: str, worker_pool: str = "threads",
                 concurrency: int = CORES, slots: int = CORES, log_level: str = "WARNING",
                 log_name: str = "worker.log") -> subprocess.Popen:  # fmt: skip
    """Start one Celery worker process on the sandbox and default queues, appended to
    `processes` (the caller stops it). Called again with another `name` and `log_name`,
    it adds a second worker beside the first (bench/load.py runs two)."""
    venv = Path(sys.executable).parent
    worker = start([str(venv / "celery"), "-A", "config", "worker", "-Q", "sandbox,celery",
                    "--pool", worker_pool, "--concurrency", str(concurrency), "-n", f"{name}-{os.getpid()}@%h",
                    "--without-mingle", "--without-gossip", "--loglevel", log_level],
                   scratch / log_name, SANDBOX_POOL_SIZE=str(slots))  # fmt: skip
    processes.append(worker)
    return worker


def start_platform(processes: list[subprocess.Popen], scratch: Path, *, name: str, worker_pool: str = "threads",
                   concurrency: int = CORES, slots: int = CORES, web_processes: int = 1, web_threads: int = 8,
                   log_level: str = "WARNING") -> str:  # fmt: skip
    """Start a Celery worker on the sandbox queue and gunicorn (gthread), appending both
    to `processes` (the caller stops them); returns the web server's base URL once it answers."""
    import requests

    port = free_port()
    venv = Path(sys.executable).parent
    start_worker(processes, scratch, name=name, worker_pool=worker_pool, concurrency=concurrency, slots=slots,
                 log_level=log_level)  # fmt: skip
    processes.append(start([str(venv / "gunicorn"), "config.wsgi", "-b", f"127.0.0.1:{port}", "-k", "gthread",
                            "--workers", str(web_processes), "--threads", str(web_threads), "--log-level", "warning"],
                           scratch / "web.log"))  # fmt: skip
    base = f"http://127.0.0.1:{port}"

    def web_up() -> bool:
        try:
            return requests.get(f"{base}/api/v1/schema/", timeout=2).status_code < 500
        except requests.RequestException:
            return False

    wait_until(web_up, timeout=60, what="gunicorn")
    return base


def in_throwaway_database(base_url: str, db_name: str, redis_url: str,
                          body: Callable[[list[subprocess.Popen]], dict]) -> dict:  # fmt: skip
    """Create and migrate `db_name`, empty the Redis database, run `body` with a list
    to which it appends the processes it starts, and afterwards stop them, drop the
    database and empty Redis again, whatever happened. Returns `body`'s figures."""
    admin_sql(base_url, f'CREATE DATABASE "{db_name}"')
    flush_redis(redis_url)
    processes: list[subprocess.Popen] = []
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        return body(processes)
    finally:
        for process in processes:
            stop(process)
        from django.db import connections

        connections.close_all()
        admin_sql(base_url, f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
        flush_redis(redis_url)

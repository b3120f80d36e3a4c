"""Services a fault test may stop and start at will: a Redis server of the test's own
(the shared one on 6379 serves every other test and must never go down mid-suite),
and the host's Docker engine, which the test always starts again."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PrivateRedis:
    """`redis-server` on a port and folder of its own. `persistent`: an append-only file
    synced at every write, as platform/compose.yaml runs the broker; otherwise it keeps
    nothing, and a restart loses every queued and unacknowledged message."""

    def __init__(self, folder: Path, *, persistent: bool) -> None:
        self.folder = folder
        self.persistent = persistent
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        durability = ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             "--save", "", "--daemonize", "no", "--logfile", str(self.folder / "redis.log"), *durability],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"redis-server did not start: {(self.folder / 'redis.log').read_text()[-2000:]}")
            time.sleep(0.05)
        return self

    def answers(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
        return False

    def stop(self) -> None:
        """SIGTERM, as a service manager stops it: a persistent server syncs its file first."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def restart(self) -> None:
        self.stop()
        self.start()


class DockerEngine:
    """The host's Docker engine, stopped and started the way an operator would: SIGTERM
    to dockerd (which stops its containers first), then the project's own start-up."""

    PID_FILE = Path("/var/run/docker.pid")

    def __init__(self, root: Path) -> None:
        self.root = root

    def pid(self) -> int | None:
        try:
            return int(self.PID_FILE.read_text().strip())
        except (OSError, ValueError):
            return None

    def stop(self, timeout: float = 60.0) -> None:
        pid = self.pid()
        if pid is None:
            raise AssertionError("no dockerd pid file: this test only stops a dockerd that platform scripts started")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while Path(f"/proc/{pid}").exists():
            if time.monotonic() > deadline:
                raise AssertionError(f"dockerd {pid} did not stop within {timeout:.0f} s")
            time.sleep(0.2)

    def start(self) -> None:
        script = f'. "{self.root}/platform/scripts/lib.sh"; ensure_docker'
        subprocess.run(["bash", "-c", script], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=120)  # fmt: skip


class PrivatePostgres:
    """A PostgreSQL cluster of the test's own (initdb into a fresh folder, a free port,
    trust authentication on loopback), run as the `postgres` user when the tests run
    as root, as initdb requires."""

    BIN = Path("/usr/lib/postgresql")

    def __init__(self) -> None:
        versions = sorted(self.BIN.glob("*/bin/pg_ctl"))
        if not versions:
            raise AssertionError("no PostgreSQL server binaries under /usr/lib/postgresql")
        self.bin = versions[-1].parent
        self.folder = Path(tempfile.mkdtemp(prefix="pg-fault-"))
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.folder, "postgres", "postgres")

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_postgres else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/app"

    def create(self) -> PrivatePostgres:
        self._run(str(self.bin / "initdb"), "-D", str(self.folder / "data"), "-A", "trust", "-U", "postgres")
        self.start()
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "app")
        return self

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-o", options,
                  "-l", str(self.folder / "server.log"), "-w", "start")  # fmt: skip

    def stop(self) -> None:
        """A fast shutdown, as a restart by a service manager does: sessions are cut."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

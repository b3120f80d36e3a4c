"""Who owns a Docker sandbox: an owner id unique to each process, a heartbeat in the
engine, and a reaper that removes only the containers of owners whose heartbeat has
expired, so that replicas sharing one engine, one host name and one pid (containers,
each its own pid 1) never remove each other's live sandboxes."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evaluation.sandbox.docker_owners import BEAT_LABEL, LABEL, Heartbeat, owner_id
from tests.evaluation.conftest import needs_docker

ROOT = Path(__file__).resolve().parents[2]


def _owner_in_child(env: dict[str, str]) -> str:
    code = "from evaluation.sandbox.docker_owners import owner_id; print(owner_id())"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    return done.stdout.strip()


def test_each_process_has_an_owner_id_of_its_own_even_with_the_same_host_name_and_pid():
    host, pid, token = owner_id().split(":")
    assert (host, pid) == (socket.gethostname(), str(os.getpid())) and len(token) == 16
    assert owner_id() == owner_id()  # one a process

    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # a forked child (a prefork worker's) is another owner
        os.write(write, owner_id().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    forked = os.read(read, 200).decode()
    os.close(read)
    assert forked.startswith(f"{socket.gethostname()}:{child}:") and forked != owner_id()

    # Replicas in containers: one host name, each its own pid 1 (simulated for the label).
    as_replica = {"SANDBOX_OWNER_HOST": "sandbox-host", "SANDBOX_OWNER_PID": "1"}
    first, second = _owner_in_child(as_replica), _owner_in_child(as_replica)
    assert first.startswith("sandbox-host:1:") and second.startswith("sandbox-host:1:") and first != second


def _containers() -> dict[str, Any]:
    from evaluation.sandbox.docker_backend import docker_client

    return {c["Id"]: c for c in docker_client().api.containers(all=True, filters={"label": LABEL})}


def _beats_of(owner: str) -> list[str]:
    from evaluation.sandbox.docker_backend import docker_client

    volumes = docker_client().volumes.list(filters={"label": BEAT_LABEL})
    return [v.name for v in volumes if (v.attrs.get("Labels") or {}).get(f"{LABEL}.owner") == owner]


def _remove(container_ids: list[str], owners: list[str]) -> None:
    from evaluation.sandbox.docker_backend import docker_client

    client = docker_client()
    for container_id in container_ids:
        try:
            client.containers.get(container_id).remove(force=True)
        except Exception:  # noqa: S110 - the reaper took it, as it should
            pass
    for owner in owners:
        for name in _beats_of(owner):
            client.api.remove_volume(name, force=True)


@needs_docker
def test_the_reaper_removes_containers_of_expired_owners_and_leaves_live_and_young_unknown_ones(monkeypatch):
    from evaluation.sandbox.docker_backend import DockerSandbox, docker_client, foreign_expiry_s, reap_containers

    monkeypatch.setenv("SANDBOX_OWNER_TTL_S", "3")
    client = docker_client()
    sandbox = DockerSandbox().start()  # this process: an owner with a live heartbeat
    live = Heartbeat("sandbox-host:1:live0000live0000", docker_client).start()  # another replica, beating
    dead = Heartbeat("sandbox-host:1:dead0000dead0000", docker_client)
    dead.beat()  # beat once, then fell silent: a replica that died
    now = int(time.time())

    def made(owner: str, created: int) -> Any:
        labels = {LABEL: "1", f"{LABEL}.owner": owner, f"{LABEL}.created": str(created)}
        return client.containers.create("taskplatform-sandbox:latest", command=["true"], labels=labels)

    of_live, of_dead = made(live.owner, now), made(dead.owner, now)
    young = made("another-replica:7:123", now)  # an owner that never beat (an older release): young
    old = made("another-replica:7:123", now - int(foreign_expiry_s()) - 60)  # ... older than any sandbox serves
    made_here = [of_live.id, of_dead.id, young.id, old.id]
    try:
        time.sleep(4.5)  # past the dead one's time to live; the live one beat meanwhile
        reap_containers()
        remaining = _containers()
        assert of_dead.id not in remaining and old.id not in remaining
        assert {of_live.id, young.id, sandbox.container.id} <= set(remaining)
        assert sandbox.ping()
        assert _beats_of(dead.owner) == []  # a dead owner with nothing left: its heartbeat goes too
        assert len(_beats_of(live.owner)) >= 1
    finally:
        live.stop()
        sandbox.close()
        _remove(made_here, [live.owner, dead.owner])


class Replica:
    """A sandbox worker replica in a process of its own (tests/evaluation/docker_replica.py)."""

    def __init__(self, env: dict[str, str], log: Path, sandboxes: int = 2) -> None:
        with log.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.evaluation.docker_replica", str(sandboxes)], cwd=ROOT,
                env={**os.environ, **env}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                start_new_session=True,
            )  # fmt: skip
        self.log = log
        started = self._read(timeout=120)
        self.containers: list[str] = started["containers"]
        self.owner: str = started["owner"]

    def _read(self, timeout: float) -> dict[str, Any]:
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            raise AssertionError(f"the replica did not answer within {timeout} s:\n{self.log.read_text()}")
        return json.loads(line)

    def ask(self, command: str, timeout: float = 60) -> dict[str, Any]:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self._read(timeout)

    def kill(self) -> None:
        """SIGKILL, as a replica's container is killed: it closes nothing."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.kill()


def _wait_until(condition: Any, *, timeout: float, what: str, every: Any = None) -> float:
    """Seconds until `condition()` holds, calling `every()` between looks."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, f"{what} within {timeout} s"
        if every is not None:
            every()
        time.sleep(0.25)
    return time.monotonic() - started


@needs_docker
@pytest.mark.slow
def test_two_replicas_sharing_an_engine_host_name_and_pid_reap_only_each_others_dead_containers(tmp_path):
    """Replicas A and B: separate processes whose owner labels claim the same host name
    and pid, as containers sharing one engine do (each its own pid 1)."""
    ttl_s = 4.0
    as_replica = {"SANDBOX_OWNER_HOST": "sandbox-host", "SANDBOX_OWNER_PID": "1", "SANDBOX_OWNER_TTL_S": str(ttl_s)}
    a = Replica(as_replica, tmp_path / "a.log")
    b: Replica | None = None
    try:
        b = Replica(as_replica, tmp_path / "b.log")
        assert a.owner.startswith("sandbox-host:1:") and b.owner.startswith("sandbox-host:1:")
        assert a.owner != b.owner
        # Both alive, past several of their times to live: each one's reaper leaves the other's sandboxes.
        for _ in range(3):
            assert a.ask("reap") == {"removed": 0} and b.ask("reap") == {"removed": 0}
            assert set(a.containers + b.containers) <= set(_containers())
            assert a.ask("ping") == {"alive": [True, True]} and b.ask("ping") == {"alive": [True, True]}
            time.sleep(ttl_s / 2)

        # B stops beating while its containers run on (a frozen replica, like `docker pause`).
        os.kill(b.process.pid, signal.SIGSTOP)
        assert a.ask("reap") == {"removed": 0}  # its last heartbeat is fresh: still B's
        silent_s = _wait_until(lambda: not set(b.containers) & set(_containers()), timeout=60,
                               what="the silent replica's containers reaped", every=lambda: a.ask("reap"))  # fmt: skip
        assert silent_s >= ttl_s / 2  # not before its heartbeat expired (it beat every ttl/4)
        assert set(a.containers) <= set(_containers()) and a.ask("ping") == {"alive": [True, True]}

        b.kill()
        _wait_until(lambda: _beats_of(b.owner) == [], timeout=60, what="the dead replica's heartbeats removed",
                    every=lambda: a.ask("reap"))  # fmt: skip
        assert len(_beats_of(a.owner)) >= 1
        assert a.ask("close") == {"closed": 2}
        print(f"\n[docker replicas] a silent replica's 2 containers reaped {silent_s:.1f} s after it fell "
              f"silent (time to live {ttl_s:g} s)")  # fmt: skip
    finally:
        a.stop()
        if b is not None:
            b.stop()
        _remove(a.containers + (b.containers if b else []), [a.owner] + ([b.owner] if b else []))


@needs_docker
def test_a_dead_replicas_containers_go_at_the_first_reap_once_they_exit_or_its_heartbeat_expires(tmp_path):
    """SIGKILLed, a replica closes nothing. Its attach sockets close, and its containers
    go at the next sweep once their agents have exited (when the engine ends their
    input), and at the latest once its heartbeat has expired: the engine does not always
    end a container's input when its attach client dies (StdinOnce is off), so the
    heartbeat is the guarantee."""
    as_replica = {"SANDBOX_OWNER_HOST": "sandbox-host", "SANDBOX_OWNER_PID": "1", "SANDBOX_OWNER_TTL_S": "12"}
    a = Replica(as_replica, tmp_path / "a.log", sandboxes=1)
    b: Replica | None = None
    try:
        b = Replica(as_replica, tmp_path / "b.log", sandboxes=1)
        b.kill()
        # The heartbeat's 12 s, with room for an engine slow under a loaded machine.
        _wait_until(lambda: not set(b.containers) & set(_containers()), timeout=45,
                    what="the dead replica's exited container reaped", every=lambda: a.ask("reap"))  # fmt: skip
        assert set(a.containers) <= set(_containers()) and a.ask("ping") == {"alive": [True]}
        assert a.ask("close") == {"closed": 1}
    finally:
        a.stop()
        if b is not None:
            b.stop()
        _remove(a.containers + (b.containers if b else []), [a.owner] + ([b.owner] if b else []))

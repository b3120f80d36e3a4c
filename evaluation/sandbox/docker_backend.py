"""The Docker backend: each sandbox is one long-lived container holding a warm agent.

Every container: no network, a read-only root filesystem, tmpfs scratch, a
non-root uid of its own (host-wide unique, as for bwrap), all capabilities
dropped, no-new-privileges, memory, pids and CPU limits, and labels that let
the reaper find every container the platform made.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from typing import Any

from evaluation.sandbox.base import AgentSandbox
from evaluation.sandbox.channel import DockerStreamReader
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.harness_files import AGENT_ENTRY, harness_version, readable_copy
from evaluation.sandbox.uids import UidLease, lease_uid

IMAGE = os.environ.get("SANDBOX_DOCKER_IMAGE", "taskplatform-sandbox:latest")
LABEL = "org.taskplatform.sandbox"
MEMORY_MB = int(os.environ.get("SANDBOX_DOCKER_MEMORY_MB", "2048"))
PIDS = int(os.environ.get("SANDBOX_DOCKER_PIDS", "256"))
START_TIMEOUT_S = 30.0
ENVIRONMENT = {"PYTHONPATH": "/", "HARNESS_SCRATCH": "/scratch", "HARNESS_WIPE": "/tmp:/dev/shm",
               "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # fmt: skip
TMPFS = {"/scratch": "rw,size=256m,mode=1777", "/tmp": "rw,size=16m,mode=1777"}


def docker_client() -> Any:
    import docker

    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:  # the engine's absence is an infrastructure fault
        raise SandboxFailure(f"the Docker engine does not answer: {exc}", anomaly="backend_missing") from exc
    return client


class DockerSandbox(AgentSandbox):
    backend = "docker"

    def __init__(self, *, slot: int = 0, hash_seed: int = 1, image: str = IMAGE) -> None:
        self.slot = slot
        self.hash_seed = hash_seed
        self.image_name = image
        self.id = f"docker-{uuid.uuid4().hex[:12]}"
        self.container: Any = None
        self.sock: Any = None
        self.reader: DockerStreamReader | None = None
        self.ready: dict[str, Any] = {}
        self.image_id = ""
        self.runs = 0
        self.uid_lease: UidLease | None = None

    def start(self) -> DockerSandbox:
        client = docker_client()
        try:
            image = client.images.get(self.image_name)
        except Exception as exc:
            raise SandboxFailure(
                f"no sandbox image {self.image_name!r}: run `make sandbox-image`", anomaly="backend_missing"
            ) from exc
        self.image_id = image.id
        self.uid_lease = lease_uid(hint=os.getpid() * 13 + self.slot)
        uid = self.uid_lease.uid
        try:
            self.container = client.containers.create(
                image.id,
                command=["python3", "-S", "-s", "-B", "-P", "-c", AGENT_ENTRY],  # from its bytecode
                name=self.id,
                stdin_open=True,
                tty=False,
                detach=True,
                network_mode="none",
                read_only=True,
                tmpfs=TMPFS,
                user=f"{uid}:{uid}",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                mem_limit=f"{MEMORY_MB}m",
                memswap_limit=f"{MEMORY_MB}m",
                pids_limit=PIDS,
                shm_size="1m",
                nano_cpus=1_000_000_000,
                environment={**ENVIRONMENT, "PYTHONHASHSEED": str(self.hash_seed)},
                volumes={str(readable_copy()): {"bind": "/harness", "mode": "ro"}},
                working_dir="/scratch",
                hostname="sandbox",
                labels=self._labels(),
            )
            attached = self.container.attach_socket(params={"stdin": 1, "stdout": 1, "stream": 1})
            self.sock = attached._sock  # the raw socket under docker-py's wrapper
            self.container.start()
            self.reader = DockerStreamReader(self.sock)
            self.ready = self.reader.read(time.monotonic() + START_TIMEOUT_S)
        except SandboxFailure as exc:
            self.close()
            raise SandboxFailure(f"the container did not come up: {exc}", anomaly="start_failed") from exc
        except Exception as exc:
            self.close()
            raise SandboxFailure(f"could not start a container: {exc}", anomaly="start_failed") from exc
        if self.ready.get("op") != "ready" or self.ready.get("harness") != harness_version():
            self.close()
            raise SandboxFailure(f"unexpected greeting from the container: {self.ready}", anomaly="start_failed")
        return self

    @staticmethod
    def _labels() -> dict[str, str]:
        owner = f"{socket.gethostname()}:{os.getpid()}"
        return {LABEL: "1", f"{LABEL}.owner": owner, f"{LABEL}.created": str(int(time.time()))}

    @property
    def alive(self) -> bool:
        return self.container is not None and self.sock is not None

    def close(self) -> None:
        container, self.container = self.container, None
        sock, self.sock = self.sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass
        if container is not None:
            try:
                container.remove(force=True)
            except Exception:  # noqa: S110 - the reaper removes what this could not
                pass
        if self.uid_lease is not None:
            self.uid_lease.release()
            self.uid_lease = None

    def fingerprint_parts(self) -> list[str]:
        return [f"docker:{self.image_id}"]

    def _write(self, data: bytes) -> None:
        self.sock.sendall(data)


def reap_containers(*, everything: bool = False) -> int:
    """Remove containers the platform made whose owning process is gone, or that no
    longer run (or all of them with `everything`): what a crashed worker left, and what
    a live one could not remove while the engine was away (it stops every container on
    its way down). A sandbox in use always runs its agent, so an exited one is no one's.
    Returns the count."""
    client = docker_client()
    host = socket.gethostname()
    removed = 0
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        owner = container.labels.get(f"{LABEL}.owner", "")
        owner_host, _, pid = owner.partition(":")
        alive = owner_host == host and pid.isdigit() and _process_alive(int(pid))
        if everything or not alive or container.status in ("exited", "dead"):
            try:
                container.remove(force=True)
                removed += 1
            except Exception:  # noqa: S110 - gone already
                pass
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

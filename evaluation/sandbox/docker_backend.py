"""The Docker backend: each sandbox is one long-lived container holding a warm supervisor.

Every container: no network, a read-only root filesystem, tmpfs scratch, a
non-root uid of its own (host-wide unique, as for bwrap), all capabilities
dropped, no-new-privileges, memory, pids and CPU limits, and labels that let
the reaper find every container the platform made.
"""

from __future__ import annotations

import functools
import os
import time
import uuid
from typing import Any

from evaluation.sandbox.base import SupervisorSandbox
from evaluation.sandbox.channel import DockerStreamReader
from evaluation.sandbox.docker_handover import StartHandover
from evaluation.sandbox.docker_owners import (
    LABEL,
    heartbeat_ages,
    heartbeat_ensure,
    heartbeats_prune,
    owner_id,
    owner_ttl_s,
)
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.harness_files import SUPERVISOR_ENTRY, readable_copy
from evaluation.sandbox.languages import LanguageUnavailable
from evaluation.sandbox.uids import UidLease, lease_uid

IMAGE = os.environ.get("SANDBOX_DOCKER_IMAGE", "taskplatform-sandbox:latest")
MEMORY_MB = int(os.environ.get("SANDBOX_DOCKER_MEMORY_MB", "2048"))
PIDS = int(os.environ.get("SANDBOX_DOCKER_PIDS", "256"))
START_TIMEOUT_S = 30.0
ENVIRONMENT = {"PYTHONPATH": "/", "HARNESS_SCRATCH": "/scratch", "HARNESS_WIPE": "/tmp:/dev/shm",
               "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # fmt: skip
# Docker mounts a tmpfs noexec: nothing a solution writes is executed. A built program
# runs from a sealed in-memory copy the judge makes (harness/program.py: open_built).
TMPFS = {"/scratch": "rw,noexec,size=256m,mode=1777", "/tmp": "rw,noexec,size=16m,mode=1777"}


@functools.cache
def image_id(name: str = IMAGE) -> str:
    """The sandbox image's ID (once a process: a rebuilt image is a new worker's). What a
    program built in it is cached under, beside the toolchain's fingerprint."""
    try:
        return str(docker_client().images.get(name).id)
    except SandboxFailure as exc:
        raise LanguageUnavailable(str(exc)) from exc
    except Exception as exc:
        raise LanguageUnavailable(f"no sandbox image {name!r} to build in: run `make sandbox-image` ({exc})") from exc


def docker_client() -> Any:
    import docker

    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:  # the engine's absence is an infrastructure fault
        raise SandboxFailure(f"the Docker engine does not answer: {exc}", anomaly="backend_missing") from exc
    return client


class DockerSandbox(SupervisorSandbox):
    backend = "docker"

    def __init__(self, *, slot: int = 0, hash_seed: int = 1, image: str = IMAGE, peer_fd: int | None = None) -> None:
        self.slot = slot
        self.peer_fd = peer_fd  # an interactive run's other side (docker_handover.py), for a one-run sandbox
        self.memory_cgroup: Any = None  # its judge and run cgroups (memory_cgroups.py), where the host makes them
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
        handover = None
        try:
            handover = StartHandover(self.peer_fd)
            environment = {**ENVIRONMENT, "PYTHONHASHSEED": str(self.hash_seed), **handover.environment}
            volumes = {str(readable_copy()): {"bind": "/harness", "mode": "ro"}, **handover.volume}
            owner = heartbeat_ensure(docker_client)  # beating before its first container exists
            self.container = client.containers.create(
                image.id,
                command=["python3", "-S", "-s", "-B", "-P", "-c", SUPERVISOR_ENTRY],  # from its bytecode
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
                environment=environment,
                volumes=volumes,
                working_dir="/scratch",
                hostname="sandbox",
                labels=self._labels(owner),
            )
            attached = self.container.attach_socket(params={"stdin": 1, "stdout": 1, "stream": 1})
            self.sock = attached._sock  # the raw socket under docker-py's wrapper
            self.container.start()
            deadline = time.monotonic() + START_TIMEOUT_S
            # Its descriptors first: the supervisor takes them before it greets.
            self.memory_cgroup = handover.hand_over(uid, deadline, self.sock)
            self.reader = DockerStreamReader(self.sock)
            self.ready = self.reader.read(deadline)
        except SandboxFailure as exc:
            self.close()
            raise SandboxFailure(f"the container did not come up: {exc}", anomaly="start_failed") from exc
        except Exception as exc:
            self.close()
            raise SandboxFailure(f"could not start a container: {exc}", anomaly="start_failed") from exc
        finally:
            if handover is not None:
                handover.close()
        self._check_greeting("the container")
        return self

    @staticmethod
    def _labels(owner: str) -> dict[str, str]:
        return {LABEL: "1", f"{LABEL}.owner": owner, f"{LABEL}.created": str(int(time.time()))}

    @property
    def alive(self) -> bool:
        return self.container is not None and self.sock is not None

    def close(self) -> None:
        container, self.container = self.container, None
        sock, self.sock = self.sock, None
        if self.memory_cgroup is not None:
            self.memory_cgroup.close()  # its counters' descriptors: the cgroups go with the container
        remove_container(container, sock)
        if self.uid_lease is not None:
            self.uid_lease.release()
            self.uid_lease = None

    def death_evidence(self) -> tuple[str | None, str]:
        """What the engine says of a container whose supervisor stopped answering. One the
        kernel killed for memory held nothing but the run's own processes under its
        limit (evidence against the solution); any other end names no evidence."""
        container = self.container
        if container is None:
            return None, ""
        try:
            container.wait(timeout=2)
        except Exception:  # noqa: S110 - still running (stalled, not dead): its state below says so
            pass
        container.reload()
        state = container.attrs.get("State") or {}
        if state.get("OOMKilled"):
            return "container_oom", "the kernel killed the container for memory (OOMKilled)"
        return None, f"the container is {state.get('Status')} (exit code {state.get('ExitCode')})"

    def fingerprint_parts(self) -> list[str]:
        return [f"docker:{self.image_id}"]

    def _write(self, data: bytes) -> None:
        self.sock.sendall(data)


def remove_container(container: Any, sock: Any) -> None:
    """Close a sandbox container's attach socket and remove it, whatever it still runs
    (a verification's container or an agent session's)."""
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


def foreign_expiry_s() -> float:
    """How old a container whose owner never beat must be before it is surely no one's:
    a pool retires sandboxes past SANDBOX_MAX_AGE_S when they come back, and a run in
    one lasts at most its wall-time limit (10 min) plus the rerun of a failed first try."""
    from evaluation.sandbox.pool import max_sandbox_age_s

    return max_sandbox_age_s() + 2 * 600 + 300


def reap_containers(*, everything: bool = False) -> int:
    """Remove the containers the platform made that are no one's (or all of them with
    `everything`), and return the count:
    - those whose owner's heartbeat has expired (docker_owners: what a crashed
      worker, or a replica gone with its container, left), wherever the owner ran;
    - those that no longer run: a sandbox in use always runs its supervisor, so an exited
      one is what the engine stopped on its way down, or what an owner could not remove;
    - those whose owner never beat (made by a release before heartbeats) only once
      older than any sandbox serves (foreign_expiry_s): until then their owner may be
      alive, and removing them would fail its runs.
    Never a running container of this process, whatever its own heartbeat says. Then
    the heartbeats of dead owners with no container left go too."""
    client = docker_client()
    mine = owner_id()
    ttl = owner_ttl_s()
    expiry = foreign_expiry_s()
    ages, beats = heartbeat_ages(client)  # read before the containers: an owner's beat precedes its containers
    now = time.time()
    removed = 0
    kept: set[str] = set()
    # One call, no inspect a container (containers.list's): a container another reaper
    # removes meanwhile makes an inspect fail.
    for container in client.api.containers(all=True, filters={"label": LABEL}):
        labels = container.get("Labels") or {}
        owner = labels.get(f"{LABEL}.owner", "")
        if owner == mine:
            alive = True
        elif owner in ages:
            alive = ages[owner] < ttl
        else:
            created = labels.get(f"{LABEL}.created", "")
            alive = created.isdigit() and now - int(created) < expiry
        if everything or not alive or container.get("State") in ("exited", "dead"):
            try:
                client.api.remove_container(container["Id"], force=True)
                removed += 1
                continue
            except Exception:  # noqa: S110 - gone already
                pass
        kept.add(owner)
    dead = [owner for owner, age in ages.items() if age >= ttl and owner not in kept and owner != mine]
    heartbeats_prune(client, [name for owner in dead for name in beats.get(owner, [])])
    return removed

"""One session's sandbox as a Docker container, for hosts that run Docker: the same
session supervisor as PID 1, the prepared tree bound read-only at /base, the session's
own tree in a size-bounded tmpfs at /repo.

The container is the sandbox image (platform/sandbox: Debian's python3, pytest and
git) with no network, a read-only root, every capability dropped, no new privileges,
memory and process limits, a uid of its own (host-wide unique, as for bwrap), and the
platform's labels, so the reaper that removes orphaned verification containers
removes orphaned session containers too. The prepared tree is bound from the host
rather than baked into an image per environment: binding is instant and shares the
page cache; an image would cost a build per task version.
"""

from __future__ import annotations

import os
from typing import Any

from evaluation.sandbox.channel import DockerStreamReader
from evaluation.sandbox.docker_backend import IMAGE, DockerSandbox, docker_client, remove_container
from evaluation.sandbox.docker_owners import LABEL, heartbeat_ensure
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.harness_files import readable_copy
from evaluation.sandbox.sessions.environments import PreparedEnvironment
from evaluation.sandbox.sessions.limits import SessionLimits
from evaluation.sandbox.sessions.sandbox import SESSION_ENTRY, SessionChannel
from evaluation.sandbox.uids import UidLease, lease_uid

ENVIRONMENT = {"PYTHONPATH": "/", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


class DockerSessionSandbox(SessionChannel):
    backend = "docker"

    def __init__(self, environment: PreparedEnvironment, limits: SessionLimits, *, image: str = IMAGE) -> None:
        super().__init__(environment, limits)
        self.image_name = image
        self.container: Any = None
        self.sock: Any = None
        self.uid_lease: UidLease | None = None
        self.environment_fd = -1

    def start(self, changes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        client = docker_client()
        try:
            image = client.images.get(self.image_name)
        except Exception as exc:
            raise SandboxFailure(
                f"no sandbox image {self.image_name!r}: run `make sandbox-image`", anomaly="backend_missing"
            ) from exc
        self.environment_fd = self.environment.acquire()
        self.uid_lease = lease_uid(hint=os.getpid() * 17)
        uid = self.uid_lease.uid
        try:
            owner = heartbeat_ensure(docker_client)
            self.container = client.containers.create(
                image.id,
                command=["python3", "-S", "-s", "-B", "-P", "-c", SESSION_ENTRY],
                name=self.id,
                stdin_open=True,
                tty=False,
                detach=True,
                network_mode="none",
                read_only=True,
                tmpfs={
                    "/repo": f"rw,size={self.limits.tree_bytes},mode=0700,uid={uid},gid={uid}",
                    "/tmp": "rw,size=64m,mode=1777",
                },
                user=f"{uid}:{uid}",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                mem_limit=f"{self.limits.step_memory_mb + 256}m",
                memswap_limit=f"{self.limits.step_memory_mb + 256}m",
                pids_limit=self.limits.step_processes + 16,  # the supervisor's own, and the margin cp needs
                shm_size="1m",
                environment=ENVIRONMENT,
                volumes={
                    str(readable_copy()): {"bind": "/harness", "mode": "ro"},
                    str(self.environment.tree): {"bind": "/base", "mode": "ro"},
                },
                working_dir="/repo",
                hostname="sandbox",
                labels={**DockerSandbox._labels(owner), f"{LABEL}.kind": "session"},
            )
            attached = self.container.attach_socket(params={"stdin": 1, "stdout": 1, "stream": 1})
            self.sock = attached._sock  # the raw socket under docker-py's wrapper
            self.container.start()
            self.reader = DockerStreamReader(self.sock)
            return self._greet_and_lay_out(changes)
        except SandboxFailure:
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise SandboxFailure(f"could not start a session container: {exc}", anomaly="start_failed") from exc

    @property
    def alive(self) -> bool:
        return self.container is not None and self.sock is not None

    def _write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close(self) -> None:
        """Remove the container (everything in it ends with it)."""
        container, self.container = self.container, None
        sock, self.sock = self.sock, None
        remove_container(container, sock)
        if self.uid_lease is not None:
            self.uid_lease.release()
            self.uid_lease = None
        if self.environment_fd >= 0:
            os.close(self.environment_fd)
            self.environment_fd = -1

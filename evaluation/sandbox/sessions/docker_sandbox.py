"""One session's sandbox as a Docker container, for hosts that run Docker: the same
session supervisor as PID 1, started from the image of its prepared environment
(sessions/docker_images.py), whose /repo is the session's tree and whose /base is the
read-only reference its changes are read against.

The tree is copy-on-write: the image's layer below, the container's writable layer
above, so starting a session copies nothing (bubblewrap copies the tree into a tmpfs)
and every session of an environment shares one copy of it on disk and in the page
cache. The image is built once per environment and base image; a build costs about
a second for a tree of a few megabytes (make bench-sessions).

The container runs from it with no network, every capability dropped, no new
privileges, memory and process limits, a uid of its own (host-wide unique, as for
bwrap), /tmp a tmpfs, only the harness bound in from the host, and the platform's
labels, so the reaper that removes orphaned verification containers removes orphaned
session containers too. Its root is writable (that is where the tree's changes go)
but holds nothing else a session's uid may write. `tree_bytes` bounds the writable
layer where the engine can size it (overlay2 on xfs with project quotas); elsewhere
the supervisor measures the tree after every step, and a session past it takes no
further step.
"""

from __future__ import annotations

import os
from typing import Any

from evaluation.sandbox.channel import DockerStreamReader
from evaluation.sandbox.docker_backend import IMAGE, DockerSandbox, docker_client, remove_container
from evaluation.sandbox.docker_owners import LABEL, heartbeat_ensure
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.harness_files import readable_copy
from evaluation.sandbox.sessions.docker_images import cache_label, environment_image, prune_environment_images
from evaluation.sandbox.sessions.environments import EnvironmentCache, PreparedEnvironment
from evaluation.sandbox.sessions.limits import SessionLimits
from evaluation.sandbox.sessions.sandbox import SESSION_ENTRY, SessionChannel
from evaluation.sandbox.uids import UidLease, lease_uid

ENVIRONMENT = {"PYTHONPATH": "/", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
# Whether this engine sizes a container's writable layer (`--storage-opt size`): learnt
# at the first session, as the engine's answer to asking for it.
_sized_layers: bool | None = None


class DockerSessionSandbox(SessionChannel):
    backend = "docker"

    def __init__(self, environment: PreparedEnvironment, limits: SessionLimits, *, image: str = IMAGE) -> None:
        super().__init__(environment, limits)
        self.image_name = image
        self.container: Any = None
        self.sock: Any = None
        self.uid_lease: UidLease | None = None
        self.environment_fd = -1
        self.sized_layer = False

    def start(self, changes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        client = docker_client()
        try:
            base = client.images.get(self.image_name)
        except Exception as exc:
            raise SandboxFailure(
                f"no sandbox image {self.image_name!r}: run `make sandbox-image`", anomaly="backend_missing"
            ) from exc
        self.environment_fd = self.environment.acquire()
        self.uid_lease = lease_uid(hint=os.getpid() * 17)
        uid = self.uid_lease.uid
        try:
            owner = heartbeat_ensure(docker_client)
            options = dict(
                command=["python3", "-S", "-s", "-B", "-P", "-c", SESSION_ENTRY],
                name=self.id,
                stdin_open=True,
                tty=False,
                detach=True,
                network_mode="none",
                read_only=False,  # the tree's changes go to the container's own layer
                tmpfs={"/tmp": "rw,size=64m,mode=1777"},
                user=f"{uid}:{uid}",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                mem_limit=f"{self.limits.step_memory_mb + 256}m",
                memswap_limit=f"{self.limits.step_memory_mb + 256}m",
                pids_limit=self.limits.step_processes + 16,  # the supervisor's own, and a margin
                shm_size="1m",
                environment=ENVIRONMENT,
                volumes={str(readable_copy()): {"bind": "/harness", "mode": "ro"}},
                working_dir="/repo",
                hostname="sandbox",
                labels={**DockerSandbox._labels(owner), f"{LABEL}.kind": "session"},
            )
            self.container = self._create(client, base.id, options)
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

    def _create(self, client: Any, base_id: str, options: dict[str, Any]) -> Any:
        """The session's container, from its environment's image (built now if need be)."""
        import docker.errors

        try:
            return self._create_sized(client, environment_image(client, self.environment, base_id), options)
        except docker.errors.ImageNotFound:
            # Pruned between the look-up and the create by a host whose cache let the
            # environment go: built again.
            return self._create_sized(client, environment_image(client, self.environment, base_id), options)

    def _create_sized(self, client: Any, image: str, options: dict[str, Any]) -> Any:
        """A container whose writable layer is sized to `tree_bytes` where the engine can
        size it (overlay2 on xfs with project quotas), unsized elsewhere."""
        import docker.errors

        global _sized_layers
        if _sized_layers is not False:
            try:
                container = client.containers.create(image, storage_opt={"size": str(self.limits.tree_bytes)},
                                                     **options)  # fmt: skip
            except docker.errors.ImageNotFound:
                raise
            except docker.errors.APIError as exc:
                if "storage" not in str(exc).lower():
                    raise
                _sized_layers = False  # "--storage-opt is supported only for overlay over xfs with 'pquota'"
            else:
                _sized_layers = self.sized_layer = True
                return container
        return client.containers.create(image, **options)

    def layout(self) -> dict[str, Any]:
        """The image laid the tree out already; where its layer is unsized, the supervisor
        measures the tree after every step."""
        return {"copy_base": False, "quota_bytes": 0 if self.sized_layer else self.limits.tree_bytes}

    @classmethod
    def prune_environments(cls, cache: EnvironmentCache) -> list[str]:
        """Remove the images of environments `cache` no longer holds (and of replaced
        builds), never one a container uses."""
        keep = {path.name for _, _, path in cache.entries()}
        return prune_environment_images(docker_client(), keep, cache=cache_label(cache.root))

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

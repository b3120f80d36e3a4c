"""What a Docker sandbox's supervisor is handed as it starts: its memory cgroup's
descriptors, and an interactive run's peer (harness/handover.py takes them).

A bwrap sandbox is started with these already open (its peer on fd 3, the memory
cgroup's descriptors named in HARNESS_MEMCG); a container cannot be handed a
descriptor as it starts. So the host puts a listening Unix socket in a directory of
its own, bound read-only into that one container, and the container's supervisor
connects to it before it does anything else. The host checks who connected
(SO_PEERCRED: the container's uid, host-wide unique for as long as the container
lives, and the pid of its PID 1), makes the container's `judge` and `run` cgroups
below the container's own and moves that pid into `judge` (memory_cgroups.py), and
sends the descriptors over the connection (SCM_RIGHTS) with a line naming them. Then
the listener and its directory go, before any solution process exists to find them.

The two sides of an interactive run are then joined by the host's socket pair,
exactly as two bwrap sandboxes are: no byte of the dialogue passes through the host.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import struct
import tempfile
import time

from evaluation.sandbox import memory_cgroups
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.memory_cgroups import SandboxCgroup

MOUNT = "/handover"  # where the container sees the directory
NAME = "handover.sock"
ENV = "HARNESS_HANDOVER"


class StartHandover:
    """The descriptors for one container, waiting for its supervisor to take them."""

    def __init__(self, peer_fd: int | None = None, *, memory: bool = True) -> None:
        self.peer_fd = peer_fd
        self.memory = memory
        self.directory = tempfile.mkdtemp(prefix="sandbox-handover-")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            path = os.path.join(self.directory, NAME)
            self.listener.bind(path)
            # The container runs as a uid of its own: it must traverse the directory and
            # write to the socket to connect. Who connected is checked, not assumed.
            os.chmod(self.directory, 0o755)  # noqa: S103 - holds only the socket
            os.chmod(path, 0o666)  # noqa: S103 - SO_PEERCRED decides who is answered
            self.listener.listen(4)
        except OSError:
            self.close()
            raise

    @property
    def volume(self) -> dict[str, dict[str, str]]:
        return {self.directory: {"bind": MOUNT, "mode": "ro"}}

    @property
    def environment(self) -> dict[str, str]:
        return {ENV: f"{MOUNT}/{NAME}"}

    def hand_over(self, uid: int, deadline: float, channel: socket.socket) -> SandboxCgroup | None:
        """Answer the first connection made as `uid` before `deadline` (time.monotonic())
        with the container's descriptors, and return its memory cgroups (None where this
        host makes none). A connection as anyone else is dropped unanswered. The
        container's `channel` speaking (or closing) first means its supervisor will never
        come: that fails now rather than at the deadline."""
        while True:
            remaining = deadline - time.monotonic()
            ready = select.select([self.listener, channel], [], [], max(0.0, remaining))[0]
            if not ready:
                raise SandboxFailure("the container's supervisor never came for its descriptors",
                                     anomaly="start_failed")  # fmt: skip
            if self.listener not in ready:
                raise SandboxFailure("the container's supervisor spoke or ended before it took its descriptors",
                                     anomaly="start_failed")  # fmt: skip
            connection, _ = self.listener.accept()
            with connection:
                credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
                pid, peer_uid, _gid = struct.unpack("3i", credentials)
                if peer_uid != uid:
                    continue
                return self._send(connection, pid)

    def _send(self, connection: socket.socket, pid: int) -> SandboxCgroup | None:
        fds: list[int] = []
        message: dict[str, object] = {}
        if self.peer_fd is not None:
            message["peer"] = len(fds)
            fds.append(self.peer_fd)
        cgroup = None
        memcg_fds: list[int] = []
        try:
            cgroup = memory_cgroups.for_container(pid) if self.memory else None
            if cgroup is not None:
                opened = cgroup.zygote_descriptors()
                memcg_fds = list(opened.values())
                # The numbers are this process's: name each by its place in the message.
                message["memcg"] = {"version": f"v{cgroup.version}",
                                    "fds": {key: len(fds) + i for i, key in enumerate(opened)}}  # fmt: skip
                fds += memcg_fds
        except OSError as exc:
            raise SandboxFailure(f"the container's memory cgroup could not be made: {exc}",
                                 anomaly="start_failed") from exc  # fmt: skip
        try:
            socket.send_fds(connection, [json.dumps(message).encode()], fds)
        finally:
            for fd in memcg_fds:
                os.close(fd)
        return cgroup

    def close(self) -> None:
        self.listener.close()
        shutil.rmtree(self.directory, ignore_errors=True)

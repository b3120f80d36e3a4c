"""An interactive run's peer for a Docker sandbox (harness/suite_interactive.py).

A bwrap sandbox is forked with its peer already on fd 3; a container cannot be
handed a descriptor as it starts. So the host puts a listening Unix socket in a
directory of its own, bound read-only into that one container, and the
container's supervisor connects to it before it does anything else
(suite_interactive.adopt_peer). The host checks who connected (SO_PEERCRED: the
container's uid, host-wide unique for as long as the container lives) and sends
the peer over that connection (SCM_RIGHTS); then the listener and its directory
go. The two sides of the run are then joined by the host's socket pair, exactly
as two bwrap sandboxes are: no byte of the dialogue passes through the host, and
the solution's processes (born after the handover) find nothing to connect to.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import struct
import tempfile
import time

from evaluation.sandbox.errors import SandboxFailure

MOUNT = "/peer"  # where the container sees the directory
NAME = "handover.sock"


class PeerHandover:
    """One peer descriptor, waiting for one container to take it."""

    def __init__(self, peer_fd: int) -> None:
        self.peer_fd = peer_fd
        self.directory = tempfile.mkdtemp(prefix="sandbox-peer-")
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
        return {"HARNESS_PEER": f"{MOUNT}/{NAME}"}

    def hand_over(self, uid: int, deadline: float, channel: socket.socket) -> None:
        """Send the peer to the first connection made as `uid` before `deadline`
        (time.monotonic()); a connection as anyone else is dropped unanswered. The
        container's `channel` speaking (or closing) first means its supervisor will
        never come: it fails now rather than at the deadline."""
        while True:
            remaining = deadline - time.monotonic()
            ready = select.select([self.listener, channel], [], [], max(0.0, remaining))[0]
            if not ready:
                raise SandboxFailure("the container never came for its interactive peer", anomaly="start_failed")
            if self.listener not in ready:
                raise SandboxFailure("the container's supervisor spoke or ended before it took its interactive peer",
                                     anomaly="start_failed")  # fmt: skip
            connection, _ = self.listener.accept()
            with connection:
                credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
                _pid, peer_uid, _gid = struct.unpack("3i", credentials)
                if peer_uid != uid:
                    continue
                socket.send_fds(connection, [b"peer"], [self.peer_fd])
                return

    def close(self) -> None:
        self.listener.close()
        shutil.rmtree(self.directory, ignore_errors=True)

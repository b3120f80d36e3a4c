"""The host's end of a supervisor's frame channel, with deadlines on every read."""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any

from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.harness import protocol


def wait_readable(fd: int, timeout: float) -> bool:
    """Whether `fd` turned readable (or hung up) within `timeout` seconds. poll(), not
    select(): select() refuses a descriptor numbered 1024 or more (ValueError), which
    a worker holding many sandboxes, connections and files at once reaches."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(max(0.0, timeout) * 1000.0))


class FrameReader:
    """Frames from a file descriptor (a pipe to bwrap, or a socket to a container)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()

    def _read_some(self) -> bytes:
        return os.read(self.fd, 1 << 20)

    def _fill(self, size: int, deadline: float) -> None:
        while len(self.buffer) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SandboxFailure("the sandbox did not answer in time", anomaly="host_deadline")
            if not wait_readable(self.fd, remaining):
                continue
            chunk = self._read_some()
            if not chunk:
                raise SandboxFailure("the sandbox closed its channel", anomaly="sandbox_died")
            self.buffer += chunk

    def read(self, deadline: float) -> dict[str, Any]:
        self._fill(protocol.HEADER.size, deadline)
        (size,) = protocol.HEADER.unpack(bytes(self.buffer[: protocol.HEADER.size]))
        if size > protocol.MAX_FRAME:
            raise SandboxFailure(f"the sandbox sent a frame of {size} bytes", anomaly="protocol")
        self._fill(protocol.HEADER.size + size, deadline)
        payload = bytes(self.buffer[protocol.HEADER.size : protocol.HEADER.size + size])
        del self.buffer[: protocol.HEADER.size + size]
        try:
            return json.loads(payload)
        except ValueError as exc:
            raise SandboxFailure(f"the sandbox sent a frame that is not JSON: {exc}", anomaly="protocol") from exc


class DockerStreamReader(FrameReader):
    """Frames from a container's attached stdout. Without a TTY the engine
    multiplexes stdout and stderr, each chunk behind an 8-byte header (stream
    id, three zero bytes, big-endian length); only stdout (id 1) is ours."""

    def __init__(self, sock: Any) -> None:
        super().__init__(sock.fileno())
        self.sock = sock
        self.raw = bytearray()

    def _fill(self, size: int, deadline: float) -> None:
        while len(self.buffer) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SandboxFailure("the sandbox did not answer in time", anomaly="host_deadline")
            if not wait_readable(self.sock.fileno(), remaining):
                continue
            data = self.sock.recv(1 << 20)
            if not data:
                raise SandboxFailure("the container closed its channel", anomaly="sandbox_died")
            self.raw += data
            while len(self.raw) >= 8:
                stream, length = self.raw[0], int.from_bytes(self.raw[4:8], "big")
                if len(self.raw) < 8 + length:
                    break
                if stream == 1:
                    self.buffer += self.raw[8 : 8 + length]
                del self.raw[: 8 + length]

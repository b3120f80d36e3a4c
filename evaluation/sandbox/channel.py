"""The host's end of an agent's frame channel, with deadlines on every read."""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any

from evaluation.harness import protocol
from evaluation.sandbox.errors import SandboxFailure


class FrameReader:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()

    def _fill(self, size: int, deadline: float) -> None:
        while len(self.buffer) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SandboxFailure("the sandbox did not answer in time", anomaly="host_deadline")
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self.fd, 1 << 20)
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

"""Length-prefixed JSON frames over file descriptors.

Reads are exact (os.read loops, no buffering), so a reader never consumes
bytes past its own frame: the agent reads the run frame and leaves the tests
frame for the judge to read from the same descriptor.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

HEADER = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024


class ChannelClosed(EOFError):
    """The other end went away."""


class ChannelCorrupt(ValueError):
    """The other end sent something that is not a frame."""


def read_exact(fd: int, size: int) -> bytes:
    chunks = []
    remaining = size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise ChannelClosed(f"channel closed with {remaining} of {size} bytes unread")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def encode_frame(message: Any) -> bytes:
    payload = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    if len(payload) > MAX_FRAME:
        raise ChannelCorrupt(f"frame of {len(payload)} bytes exceeds {MAX_FRAME}")
    return HEADER.pack(len(payload)) + payload


def send(fd: int, message: Any) -> None:
    write_all(fd, encode_frame(message))


def receive(fd: int, *, limit: int = MAX_FRAME) -> Any:
    (size,) = HEADER.unpack(read_exact(fd, HEADER.size))
    if size > limit:
        raise ChannelCorrupt(f"frame of {size} bytes exceeds the limit of {limit}")
    payload = read_exact(fd, size)
    try:
        return json.loads(payload)
    except ValueError as exc:
        raise ChannelCorrupt(f"frame is not JSON: {exc}") from exc

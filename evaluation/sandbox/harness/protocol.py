"""Length-prefixed JSON frames over file descriptors.

Reads are exact (os.read loops, no buffering), so a reader never consumes
bytes past its own frame: the supervisor reads the run frame and leaves the tests
frame for the judge to read from the same descriptor.
"""

from __future__ import annotations

import os
import select
import struct
import sys
import time

from . import lite

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

HEADER = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024


# Plain data may nest deeply (a test may pass a list nested 10,000 levels to check
# that a solution does not recurse); JSON and the codec recurse per level, so they
# run with a raised recursion limit, and only they: the candidate keeps Python's own.
DEEP_RECURSION_LIMIT = 50_000


class deep_recursion:
    def __enter__(self) -> None:
        self.saved = sys.getrecursionlimit()
        sys.setrecursionlimit(max(self.saved, DEEP_RECURSION_LIMIT))

    def __exit__(self, *exc: object) -> None:
        sys.setrecursionlimit(self.saved)


class ChannelClosed(EOFError):
    """The other end went away."""


class ChannelCorrupt(ValueError):
    """The other end sent something that is not a frame."""


class ChannelTimeout(TimeoutError):
    """The other end started a frame and did not finish it in time."""


def read_exact(fd: int, size: int, deadline: float | None = None) -> bytes:
    chunks = []
    remaining = size
    while remaining:
        if deadline is not None:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise ChannelTimeout(f"the peer stalled with {remaining} of {size} bytes unsent")
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
    with deep_recursion():
        payload = lite.dumps(message, allow_nan=False).encode()
    if len(payload) > MAX_FRAME:
        raise ChannelCorrupt(f"frame of {len(payload)} bytes exceeds {MAX_FRAME}")
    return HEADER.pack(len(payload)) + payload


def send(fd: int, message: Any) -> None:
    write_all(fd, encode_frame(message))


def receive(fd: int, *, limit: int = MAX_FRAME, deadline: float | None = None) -> Any:
    """One frame. With a `deadline` (time.monotonic()), a peer that sends part of a
    frame and stalls raises ChannelTimeout instead of blocking the reader."""
    (size,) = HEADER.unpack(read_exact(fd, HEADER.size, deadline))
    if size > limit:
        raise ChannelCorrupt(f"frame of {size} bytes exceeds the limit of {limit}")
    payload = read_exact(fd, size, deadline)
    try:
        with deep_recursion():
            return lite.loads(payload)
    except (ValueError, RecursionError) as exc:
        raise ChannelCorrupt(f"frame is not JSON: {type(exc).__name__}") from exc

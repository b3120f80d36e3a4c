"""A solution process's pipes as the judge holds them: the output it captures (the
first bytes of each stream, up to the run's output limit, drained by one collector
thread for the judge's whole life) and the input it feeds in."""

from __future__ import annotations

import os
import select

from . import lite, protocol

# Under a pipe's default 64 KiB: written at once, unless the host shrank new pipes
# (fs.pipe-user-pages-soft), in which case the write is partial and a thread goes on.
QUICK_FEED_BYTES = 60_000

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any


class Capture:
    """One output pipe of a solution process, of which the first `cap` bytes are
    kept. The collector thread reads it; `join` waits for its end."""

    def __init__(self, fd: int, cap: int, on_exceeded: Any) -> None:
        self.fd, self.cap, self.on_exceeded = fd, cap, on_exceeded
        self.kept = bytearray()
        self.total = 0
        self.done = lite.Event()

    def feed(self) -> bool:
        """Read what is there; False once the pipe has ended or overflowed."""
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            return False
        self.total += len(chunk)
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
        if self.total > self.cap:
            self.on_exceeded()
            return False
        return True

    def finish(self) -> None:
        os.close(self.fd)
        self.done.set()

    def join(self, timeout: float | None = None) -> None:
        self.done.wait(timeout)

    def is_alive(self) -> bool:
        return not self.done.is_set()

    @property
    def exceeded(self) -> bool:
        return self.total > self.cap

    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")


class Collector:
    """One thread, for the judge's whole life, that drains every solution process's
    output pipes: cheaper than starting reader threads for each process."""

    def __init__(self) -> None:
        self.lock = lite.Lock()
        self.captures: dict[int, Capture] = {}
        self.wake_r, self.wake_w = os.pipe()
        self.poller = select.poll()
        self.poller.register(self.wake_r, select.POLLIN)

    def add(self, *captures: Capture) -> None:
        with self.lock:
            for capture in captures:
                self.captures[capture.fd] = capture
                self.poller.register(capture.fd, select.POLLIN)
        os.write(self.wake_w, b"+")

    def run(self) -> None:
        while True:
            for fd, _events in self.poller.poll():
                if fd == self.wake_r:
                    os.read(self.wake_r, 4096)
                    continue
                with self.lock:
                    capture = self.captures.get(fd)
                if capture is None or capture.feed():
                    continue
                with self.lock:
                    del self.captures[fd]
                    self.poller.unregister(fd)
                capture.finish()


_collector: Collector | None = None


def collector() -> Collector:
    global _collector
    if _collector is None:
        _collector = Collector()
        lite.start_thread(_collector.run)
    return _collector


def feed(fd: int, data: bytes) -> None:
    """Write `data` into a solution process's pipe, then close it (its end of input)."""
    try:
        protocol.write_all(fd, data)
    except OSError:
        pass  # the program did not read all its input; that is its business
    finally:
        os.close(fd)


def feed_soon(fd: int, data: bytes) -> None:
    """`feed`, done here where the pipe takes `data` whole at once (the usual small
    input: a thread per test costs more than the test's own write), else from a thread
    for what is left, so a program that reads late never blocks the judge."""
    sent = 0
    if len(data) <= QUICK_FEED_BYTES:
        os.set_blocking(fd, False)
        try:
            sent = os.write(fd, data) if data else 0
        except BlockingIOError:
            sent = 0
        except OSError:  # gone already (EPIPE): what it did not read is its business
            os.close(fd)
            return
        if sent == len(data):
            os.close(fd)
            return
        os.set_blocking(fd, True)
    lite.start_thread(feed, fd, data[sent:])

"""The name a process gives itself in claims and logs: host and pid."""

from __future__ import annotations

import os
import socket


def worker_name() -> str:
    """`host:pid`: unique among live processes, and readable in an execution's row."""
    return f"{socket.gethostname()}:{os.getpid()}"

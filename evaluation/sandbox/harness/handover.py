"""A Docker sandbox's supervisor takes what the host hands it as it starts: its memory
cgroup's descriptors and, for one side of an interactive run, its peer (the host's
side and why: evaluation/sandbox/docker_handover.py).

Done before anything else, so before the zygote is forked and before any solution
process exists to race it to the socket. Afterwards the sandbox looks as a bwrap one
does: the peer on fd 3 (suite_interactive.py), the cgroup's descriptors above 10 and
named in HARNESS_MEMCG (memory_limit.py), which the zygote then takes.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket

from .memory_limit import ENV as MEMCG_ENV
from .suite_interactive import PEER_FD

MAX_FDS = 8


def adopt(path: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(30.0)
        connection.connect(path)
        data, fds, _flags, _addr = socket.recv_fds(connection, 65536, MAX_FDS)
    if not data:
        raise RuntimeError(f"the host's handover at {path} closed without a word")
    message = json.loads(data)
    # Above the numbers the channel and the peer use, whatever the kernel gave.
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds]
    for fd in fds:
        os.close(fd)
    if "peer" in message:
        os.dup2(moved[message["peer"]], PEER_FD)
        os.close(moved[message["peer"]])
    memcg = message.get("memcg")
    if memcg:
        named = ",".join(f"{key}={moved[index]}" for key, index in memcg["fds"].items())
        os.environ[MEMCG_ENV] = f"{memcg['version']}:{named}"

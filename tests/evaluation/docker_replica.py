"""One sandbox worker replica on the Docker backend, as a process of its own, for
tests/evaluation/test_docker_owners.py: `python -m tests.evaluation.docker_replica N`.

It starts N Docker sandboxes, prints `{"containers": [...], "owner": ...}`, then
answers one JSON line per command read from stdin:
- `reap`: run the Docker reaper in this process -> `{"removed": n}`;
- `ping`: ping each of its sandboxes -> `{"alive": [true, ...]}`;
- `close`: close its sandboxes and exit -> `{"closed": n}`.
The environment says which host and pid its owner label claims (SANDBOX_OWNER_HOST,
SANDBOX_OWNER_PID) and how soon a silent owner expires (SANDBOX_OWNER_TTL_S).
It imports nothing of Django: neither does the sandbox layer.
"""

from __future__ import annotations

import json
import sys

from evaluation.sandbox.docker_backend import DockerSandbox, reap_containers
from evaluation.sandbox.docker_owners import owner_id


def _answer(payload: dict) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def main(count: int) -> None:
    sandboxes = [DockerSandbox(slot=slot).start() for slot in range(count)]
    _answer({"containers": [s.container.id for s in sandboxes], "owner": owner_id()})
    for line in sys.stdin:
        command = line.strip()
        if command == "reap":
            _answer({"removed": reap_containers()})
        elif command == "ping":
            _answer({"alive": [s.ping() for s in sandboxes]})
        elif command == "close":
            for sandbox in sandboxes:
                sandbox.close()
            _answer({"closed": len(sandboxes)})
            return
        else:
            _answer({"error": f"unknown command {command!r}: reap, ping or close"})


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)

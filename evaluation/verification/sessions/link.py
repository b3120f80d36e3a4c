"""The session host this process talks to: an agent on a Unix socket
(SESSIONS["AGENT_SOCKET"]), or one this process runs itself."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from django.conf import settings

from evaluation.sandbox.sessions.agent import Agent
from evaluation.sandbox.sessions.agent_client import AgentLink, AgentUnavailable, EmbeddedAgent, SocketAgent
from tasks_app.errors import DomainError

_lock = threading.Lock()
_embedded: list[Agent] = []


class HostUnavailable(DomainError):
    code = "session_host_unavailable"
    status = 503


def agent_link() -> AgentLink:
    options = settings.SESSIONS
    if options["AGENT_SOCKET"]:
        return SocketAgent(options["AGENT_SOCKET"])
    with _lock:
        if not _embedded:
            agent = Agent(environments=Path(options["ENVIRONMENTS_DIR"]), max_sessions=options["MAX_SESSIONS"],
                          backend=options["BACKEND"])  # fmt: skip
            agent.cache.max_bytes = options["ENVIRONMENTS_MAX_BYTES"]
            agent.start_reaper()
            _embedded.append(agent)
    return EmbeddedAgent(_embedded[0])


def call(method: str, path: str, body: dict[str, Any] | None = None, *, timeout_s: float = 60.0) -> tuple[int, dict]:
    try:
        return agent_link().call(method, path, body, timeout_s=timeout_s)
    except AgentUnavailable as exc:
        raise HostUnavailable(str(exc)) from exc


def reset_embedded() -> None:
    """Close the embedded host's sessions (tests; a process that stops serving)."""
    with _lock:
        while _embedded:
            _embedded.pop().shutdown()

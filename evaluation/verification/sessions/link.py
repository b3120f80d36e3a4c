"""The session host this process talks to: an agent on a Unix socket
(SESSIONS["AGENT_SOCKET"]), or one this process runs itself."""

from __future__ import annotations

import os
import socket
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
                          backend=options["BACKEND"], spares=options["SPARES"])  # fmt: skip
            agent.cache.max_bytes = options["ENVIRONMENTS_MAX_BYTES"]
            agent.start_reaper(on_reaped=_record_reaped_from_thread)
            _embedded.append(agent)
            _forget_lost()
    return EmbeddedAgent(_embedded[0])


def _record_reaped(closed: list[tuple[str, str, str]]) -> None:
    """The embedded host's reaper closed these: their rows say so."""
    from evaluation.models import FINAL_SESSION_STATES, AgentSession

    for session_id, state, reason in closed:
        AgentSession.objects.filter(pk=session_id).exclude(state__in=FINAL_SESSION_STATES).update(
            state=state, reason=reason
        )


def _record_reaped_from_thread(closed: list[tuple[str, str, str]]) -> None:
    from django.db import connection

    try:
        _record_reaped(closed)
    finally:
        connection.close()  # the reaper's thread holds no connection between rounds


def host_name() -> str:
    """How rows name the host that holds their session."""
    options = settings.SESSIONS
    if options["AGENT_SOCKET"]:
        return f"socket:{options['AGENT_SOCKET']}"
    return f"embedded:{socket.gethostname()}:{os.getpid()}"


def _forget_lost() -> None:
    """At the embedded host's start: sessions that an embedded host of this machine held
    in a process now dead ended with it (their sandboxes die with their parent); their
    rows say so, and are counted. Other live processes' sessions are left alone."""
    from evaluation.models import FINAL_SESSION_STATES, AgentSession

    prefix = f"embedded:{socket.gethostname()}:"
    lost = 0
    rows = AgentSession.objects.filter(host__startswith=prefix).exclude(state__in=FINAL_SESSION_STATES)
    for pid in {row.host[len(prefix) :] for row in rows.only("host")}:
        if pid.isdigit() and not _alive(int(pid)):
            lost += rows.filter(host=prefix + pid).update(
                state="failed", reason="the session host's process ended: its sandboxes ended with it"
            )
    _embedded[0].host.counters["lost_at_start"] += lost


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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

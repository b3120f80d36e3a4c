"""How the web app reaches a session host agent: over its Unix socket, or in-process
(an `Agent` it runs itself, for a one-process deployment and for `make run`)."""

from __future__ import annotations

import http.client
import json
import socket
from typing import Any, Protocol

from evaluation.sandbox.sessions.agent import Agent


class AgentUnavailable(Exception):
    """The session host did not answer: an infrastructure fault, never the episode's."""


class AgentLink(Protocol):
    def call(
        self, method: str, path: str, body: dict | None = None, *, timeout_s: float = 60.0
    ) -> tuple[int, dict]: ...


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, socket_path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = socket_path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


class SocketAgent:
    """An agent in another process, at `socket_path`."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path

    def call(self, method: str, path: str, body: dict | None = None, *, timeout_s: float = 60.0) -> tuple[int, dict]:
        connection = _UnixConnection(self.socket_path, timeout_s)
        try:
            data = json.dumps(body).encode() if body is not None else None
            connection.request(method, path, body=data, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            payload = json.loads(response.read() or b"{}")
            return response.status, payload
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise AgentUnavailable(f"the session host at {self.socket_path} did not answer: {exc}") from exc
        finally:
            connection.close()


class EmbeddedAgent:
    """An agent in this process."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def call(self, method: str, path: str, body: dict | None = None, *, timeout_s: float = 60.0) -> tuple[int, dict]:
        return self.agent.handle(method, path, json.loads(json.dumps(body)) if body is not None else None)


def link_to(target: Any) -> AgentLink:
    return SocketAgent(target) if isinstance(target, str) else EmbeddedAgent(target)

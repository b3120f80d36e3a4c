"""Which sandbox a session runs in: bubblewrap (the default) or a Docker container."""

from __future__ import annotations

from evaluation.sandbox.sessions.sandbox import SessionChannel, SessionSandbox

BACKENDS = ("bwrap", "docker")


def sandbox_factory(backend: str) -> type[SessionChannel]:
    """The session sandbox class of `backend`."""
    if backend == "bwrap":
        return SessionSandbox
    if backend == "docker":
        from evaluation.sandbox.sessions.docker_sandbox import DockerSessionSandbox

        return DockerSessionSandbox
    raise ValueError(f"unknown session backend {backend!r}: one of {', '.join(BACKENDS)}")

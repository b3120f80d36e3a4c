"""Set-up shared by the sandbox security suite.

Every hostile program runs only through `evaluation.sandbox.engine.run`: never
execute one of these sources on the host.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest

from tests.evaluation.conftest import IN_CI, docker_ready

# Docker runs wherever its engine and the sandbox image are there, and always under
# CI (where `make test` sets both up, so a missing one fails rather than skips).
BACKENDS = ["bwrap"] + (["docker"] if os.environ.get("SANDBOX_TEST_DOCKER") or IN_CI or docker_ready() else [])

# A secret planted in this process's environment before any sandbox starts: the
# stand-in for the worker's own secrets (SECRET_KEY, DATABASE_URL). No sandbox
# may ever see it.
CANARY_NAME = "SBX_HOST_CANARY"
CANARY_VALUE = "canary-" + secrets.token_hex(8)


@pytest.fixture(scope="session", autouse=True)
def host_canary() -> Iterator[str]:
    saved = os.environ.get(CANARY_NAME)
    os.environ[CANARY_NAME] = CANARY_VALUE
    yield CANARY_VALUE
    if saved is None:
        os.environ.pop(CANARY_NAME, None)
    else:
        os.environ[CANARY_NAME] = saved


def backend_unavailable(backend: str) -> str | None:
    """Why `backend` cannot run here, or None."""
    if backend == "bwrap":
        from evaluation.sandbox.bwrap import bwrap_path

        return None if bwrap_path() else "bubblewrap is not installed"
    if backend == "docker":
        try:
            import evaluation.sandbox.docker_backend  # noqa: F401
        except Exception as exc:  # the backend or its SDK is missing
            return f"the docker backend is unavailable: {exc}"
        return None
    return f"unknown backend {backend}"

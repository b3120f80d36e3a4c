"""Set-up shared by the sandbox security suite.

Every hostile program runs only through `evaluation.sandbox.engine.run`: never
execute one of these sources on the host.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest

from tests.components import require
from tests.sessions_world import environment, host, session, step  # noqa: F401 - the session fixtures

# Both backends, always: a missing one fails its tests (or skips them when
# TEST_ALLOW_MISSING names it, see tests/components.py), never drops them unseen.
BACKENDS = ["bwrap", "docker"]

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


def require_backend(backend: str) -> None:
    """Fail the test (or skip it, when TEST_ALLOW_MISSING says so) if `backend` cannot run here."""
    require(backend)
    if backend == "docker":
        import evaluation.sandbox.docker_backend  # noqa: F401  (its SDK missing is an error, not a skip)

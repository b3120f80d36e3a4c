from __future__ import annotations

from collections.abc import Iterator

import pytest

from evaluation.sandbox.engine import sandbox_factory
from evaluation.sandbox.pool import SandboxPool
from tests.components import require

# A missing backend fails its tests, unless TEST_ALLOW_MISSING names it (tests/components.py).
needs_bwrap = pytest.mark.bwrap
needs_docker = pytest.mark.docker
BACKENDS = [pytest.param("bwrap", marks=needs_bwrap), pytest.param("docker", marks=needs_docker)]


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request: pytest.FixtureRequest) -> Iterator[tuple[str, SandboxPool]]:
    """(backend, warm pool of two) for each backend."""
    pool = SandboxPool(sandbox_factory(request.param), size=2)
    yield request.param, pool
    pool.close()


@pytest.fixture(scope="module")
def bwrap_pool() -> Iterator[SandboxPool]:
    require("bwrap")
    pool = SandboxPool(sandbox_factory("bwrap"), size=2)
    yield pool
    pool.close()

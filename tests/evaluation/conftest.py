from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from functools import lru_cache

import pytest

from evaluation.sandbox.engine import sandbox_factory
from evaluation.sandbox.pool import SandboxPool

# `make test` installs bubblewrap and Docker and builds the sandbox image; under
# CI a missing backend is a failure, never a quiet skip.
IN_CI = bool(os.environ.get("CI"))


@lru_cache(maxsize=1)
def docker_ready() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(
        ["docker", "image", "inspect", "taskplatform-sandbox:latest"], capture_output=True, timeout=30, check=False
    )
    return probe.returncode == 0


needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None and not IN_CI, reason="needs bubblewrap")
needs_docker = pytest.mark.skipif(not docker_ready() and not IN_CI, reason="needs Docker and the sandbox image")
BACKENDS = [pytest.param("bwrap", marks=needs_bwrap), pytest.param("docker", marks=needs_docker)]


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request: pytest.FixtureRequest) -> Iterator[tuple[str, SandboxPool]]:
    """(backend, warm pool of two) for each backend."""
    pool = SandboxPool(sandbox_factory(request.param), size=2)
    yield request.param, pool
    pool.close()


@pytest.fixture(scope="module")
def bwrap_pool() -> Iterator[SandboxPool]:
    pool = SandboxPool(sandbox_factory("bwrap"), size=2)
    yield pool
    pool.close()

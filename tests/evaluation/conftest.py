from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from evaluation.sandbox.engine import sandbox_factory
from evaluation.sandbox.pool import SandboxPool

# `make test` installs bubblewrap; under CI a missing one is a failure, not a skip.
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None and not os.environ.get("CI"), reason="needs bubblewrap")


@pytest.fixture(scope="module")
def bwrap_pool() -> Iterator[SandboxPool]:
    pool = SandboxPool(sandbox_factory("bwrap"), size=2)
    yield pool
    pool.close()

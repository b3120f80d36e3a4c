from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from evaluation.sandbox.engine import sandbox_factory
from evaluation.sandbox.pool import SandboxPool
from tests.components import require

# A missing backend fails its tests, unless TEST_ALLOW_MISSING names it (tests/components.py).
needs_bwrap = pytest.mark.bwrap
needs_docker = pytest.mark.docker
BACKENDS = [pytest.param("bwrap", marks=needs_bwrap), pytest.param("docker", marks=needs_docker)]


@pytest.fixture
def private_compile_cache(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A compile cache of the test's own, on disk and in memory: nothing another test
    built is found, so a compile the test counts on does happen."""
    from evaluation.sandbox import compile_cache

    monkeypatch.setenv("COMPILE_CACHE_DIR", str(tmp_path / "compile-cache"))
    compile_cache.forget_memory()
    yield
    compile_cache.forget_memory()


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The language of every compile run from here on, in order (engine.run watched, not replaced)."""
    from evaluation.sandbox import engine

    seen: list[str] = []
    real_run = engine.run

    def counting(request: Any, **kw: Any) -> Any:
        if request.suite_kind == "compile":
            seen.append(request.language)
        return real_run(request, **kw)

    monkeypatch.setattr(engine, "run", counting)
    return seen


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

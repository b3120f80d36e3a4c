"""The components a test needs beyond Python, checked in one place.

`make test` installs and starts every one of them (bubblewrap, the Docker engine with
the sandbox image, Chromium, Redis, PostgreSQL), so a test that needs a missing one
FAILS, naming it and saying how to get it: a suite that skips quietly would pass on a
machine where nothing was verified. Someone running tests by hand without a component
asks for its tests to be skipped instead:

    TEST_ALLOW_MISSING=bwrap,docker pytest tests/...      # or TEST_ALLOW_MISSING=all

A test says what it needs with a marker, `@pytest.mark.docker` (so `-m "not docker"`
deselects those tests outright), or calls `require("docker")` where the need is only
known at run time (a fixture parametrized by backend).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

ALLOW_ENV = "TEST_ALLOW_MISSING"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DOCKER_IMAGE = os.environ.get("SANDBOX_DOCKER_IMAGE", "taskplatform-sandbox:latest")
REDIS_ADDRESS = ("127.0.0.1", 6379)


@dataclass(frozen=True)
class Component:
    name: str  # the marker and the TEST_ALLOW_MISSING word
    what: str  # for the message and the marker's description
    remedy: str  # what `make test` does about it
    probe: Callable[[], str | None]  # why it is missing here, or None


def chromium_path() -> str | None:
    """$E2E_CHROMIUM when set, else the first Chromium on the PATH."""
    chosen = os.environ.get("E2E_CHROMIUM")
    if chosen:
        return chosen if os.path.exists(chosen) else None
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def _bwrap() -> str | None:
    return None if shutil.which("bwrap") else "is not installed"


def _docker() -> str | None:
    if shutil.which("docker") is None:
        return "is not installed (no `docker` on the PATH)"
    try:
        probe = subprocess.run(
            ["docker", "image", "inspect", DOCKER_IMAGE], capture_output=True, text=True, timeout=30, check=False
        )
    except subprocess.TimeoutExpired:
        return "does not answer (`docker image inspect` took over 30 s)"
    if probe.returncode != 0:
        detail = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        return f"cannot give the sandbox image {DOCKER_IMAGE} ({detail})"
    return None


def _chromium() -> str | None:
    if chromium_path() is not None:
        return None
    chosen = os.environ.get("E2E_CHROMIUM")
    if chosen:
        return f"is not at $E2E_CHROMIUM ({chosen})"
    return f"is not installed (none of {', '.join(CHROMIUM_NAMES)} on the PATH)"


def _redis() -> str | None:
    host, port = REDIS_ADDRESS
    try:
        with socket.create_connection(REDIS_ADDRESS, timeout=2) as conn:
            conn.sendall(b"PING\r\n")
            if conn.recv(64).startswith(b"+PONG"):
                return None
            return f"at {host}:{port} does not answer PING"
    except OSError as exc:
        return f"does not answer at {host}:{port} ({exc.strerror or exc})"


def _postgres() -> str | None:
    from django.db import connection

    if connection.vendor == "postgresql":
        return None
    return f"is not the test database (it is {connection.vendor}; DATABASE_URL is unset or names another server)"


COMPONENTS = {
    c.name: c
    for c in (
        Component("bwrap", "bubblewrap (bwrap)", "installs it", _bwrap),
        Component("docker", "the Docker engine", "installs and starts it and builds the image", _docker),
        Component("chromium", "Chromium", "installs it", _chromium),
        Component("redis", "Redis", "installs and starts it", _redis),
        Component("postgres", "PostgreSQL", "installs and starts it, and sets DATABASE_URL", _postgres),
    )
}


@cache
def missing(name: str) -> str | None:
    """Why component `name` cannot be used here, or None when it can (probed once a run)."""
    return COMPONENTS[name].probe()


def allowed_missing() -> set[str]:
    """The components whose tests may skip when missing ($TEST_ALLOW_MISSING); a word
    that names no component is an error, so a typo never turns into a silent skip."""
    raw = os.environ.get(ALLOW_ENV, "")
    words = {word.strip() for word in raw.split(",") if word.strip()}
    if "all" in words:
        return set(COMPONENTS)
    unknown = sorted(words - set(COMPONENTS))
    if unknown:
        raise pytest.UsageError(
            f"{ALLOW_ENV} names {', '.join(map(repr, unknown))}: use some of {', '.join(sorted(COMPONENTS))} (or all)"
        )
    return words


def require(name: str) -> None:
    """Fail the running test when component `name` is missing, saying why and how to
    get it; skip it instead only when $TEST_ALLOW_MISSING names the component."""
    if name not in COMPONENTS:
        raise ValueError(f"unknown component {name!r}: one of {', '.join(sorted(COMPONENTS))}")
    why = missing(name)
    if why is None:
        return
    component = COMPONENTS[name]
    if name in allowed_missing():
        pytest.skip(f"{component.what} {why} ({ALLOW_ENV}={os.environ.get(ALLOW_ENV)})")
    pytest.fail(
        f"{component.what} {why}: `make test` {component.remedy}; set {ALLOW_ENV}={name} to skip these tests instead",
        pytrace=False,
    )


# -- the hooks tests/conftest.py installs -------------------------------------------------------


def register_markers(config: pytest.Config) -> None:
    allowed_missing()  # refuse a misspelt TEST_ALLOW_MISSING before anything runs
    for component in COMPONENTS.values():
        config.addinivalue_line(
            "markers", f"{component.name}: needs {component.what}; fails without it unless {ALLOW_ENV} names it"
        )


def require_marked(item: Any) -> None:
    """Before a test's fixtures are set up: `require` each component it is marked with."""
    for name in COMPONENTS:
        if item.get_closest_marker(name) is not None:
            require(name)

"""Hostile programs run through the engine: none may pass, and the host must not notice.

Each case (tests/security/cases.py) is built so that a successful attack makes
the run pass; a verdict outside the case's expected set fails the test, and
`passed` or `sandbox_error` is never expected. After every case the host is
checked: PostgreSQL and Redis still answer, no file appeared or changed outside
the temp dirs, no process of a sandbox outlived its run, and the pool still
serves an honest run first time.

Never execute these programs any other way than through the engine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evaluation.sandbox import engine
from evaluation.sandbox.pool import SandboxPool
from evaluation.sandbox.types import RunResult

from . import hostcheck
from .cases import CASES, HONEST, PASSED, SANDBOX_ERROR, Case, read_case
from .conftest import BACKENDS, require_backend

SLOW_RUNNER_TIMEOUT_S = 240


@dataclass
class Sandboxes:
    backend: str  # the engine's backend
    pool: SandboxPool
    at_rest: int  # processes an idle sandbox holds (bwrap's own, the agent's)
    slow: subprocess.Popen | None = None
    slow_report: dict[str, Any] | None = None
    fresh: bool = False  # every run in a fresh sandbox forked from a template, none in the pool

    def run(self, request: Any) -> RunResult:
        if self.fresh:
            return engine.run(request, backend=self.backend, warm=False, cold="fork")
        return engine.run(request, backend=self.backend, pool=self.pool)

    def slow_results(self) -> dict[str, Any]:
        if self.slow_report is None:
            assert self.slow is not None, "no slow case was started"
            out, err = self.slow.communicate(timeout=SLOW_RUNNER_TIMEOUT_S)
            assert self.slow.returncode == 0, f"the slow runner failed: {err[-3000:]}"
            self.slow_report = json.loads(out.strip().splitlines()[-1])
        return self.slow_report

    def exclude(self) -> tuple[int, ...]:
        return (self.slow.pid,) if self.slow is not None and self.slow.poll() is None else ()


@pytest.fixture(scope="module")
def sandboxes() -> Iterator[Callable[[str], Sandboxes]]:
    made: dict[str, Sandboxes] = {}

    def get(variant: str) -> Sandboxes:
        if variant not in made:
            backend, fresh = variant.removesuffix(FRESH), variant.endswith(FRESH)
            require_backend(backend)
            # The host checks count every sandbox process this test process owns: the
            # engine's shared pools, left warm by earlier test modules, must go first.
            engine.close_pools()
            slow_names = [case.name for case in CASES if case.slow]
            slow = subprocess.Popen(
                [sys.executable, "-m", "tests.security.slow_runner", variant, *slow_names],
                cwd=hostcheck.PROJECT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            # One pool a backend (the fresh variant's honest runs use it too): the host
            # checks would count another's idle sandboxes as strays.
            same = next((entry for entry in made.values() if entry.backend == backend), None)
            if same is not None:
                pool, at_rest = same.pool, same.at_rest
            else:
                pool = SandboxPool(engine.sandbox_factory(backend), size=2)
                pool.warm()
                at_rest = hostcheck.rest_shape(pool) if backend == "bwrap" else 0
            made[variant] = Sandboxes(backend, pool, at_rest, slow, fresh=fresh)
        return made[variant]

    yield get
    for entry in made.values():
        entry.pool.close()
        if entry.slow is not None and entry.slow.poll() is None:
            entry.slow.kill()
            entry.slow.wait()
    engine.close_pools()  # the templates the cold runs forked from


def describe(result: RunResult) -> str:
    tests = "; ".join(f"{t.name}: {t.outcome} {t.message[:160]!r}" for t in result.tests)
    return (
        f"status={result.status} anomaly={result.anomaly} attempts={result.attempts} "
        f"message={result.message[:600]!r} tests=[{tests}] stderr={result.stderr[-400:]!r}"
    )


def host_problems(env: Sandboxes, before: hostcheck.HostSnapshot) -> list[str]:
    problems = []
    if env.backend == "bwrap":
        problems += hostcheck.sandbox_survivors(env.pool, env.at_rest, exclude=env.exclude())
    problems += hostcheck.service_problems()
    problems += hostcheck.file_problems(before)
    honest = engine.run(HONEST, backend=env.backend, pool=env.pool)
    if str(honest.status) != PASSED or honest.attempts != 1 or honest.anomaly:
        problems.append(f"the pool no longer serves an honest run first time: {describe(honest)}")
    return problems


# The variant whose every run is cold, in a sandbox forked from a template
# (evaluation/sandbox/templates.py): what the engine's reruns get.
FRESH = "-fresh"
VARIANTS = [*BACKENDS, "bwrap" + FRESH]


def _params() -> list[Any]:
    params = []
    for variant in VARIANTS:
        backend = variant.removesuffix(FRESH)
        for case in sorted(CASES, key=lambda c: c.slow):  # the slow ones last: they run beside the rest
            marks = [getattr(pytest.mark, backend)]  # `-m "not docker"` deselects a backend
            if case.known_hole(backend):
                marks.append(pytest.mark.xfail(strict=True, reason=case.known_hole(backend)))
            params.append(pytest.param(variant, case, id=f"{variant}-{case.name}", marks=marks))
    return params


def test_cases_are_well_formed() -> None:
    assert len(CASES) >= 26
    for case in CASES:
        assert case.expect, case.name
        assert PASSED not in case.expect and SANDBOX_ERROR not in case.expect, case.name


@pytest.mark.parametrize(("variant", "case"), _params())
def test_hostile_program(variant: str, case: Case, sandboxes: Callable[[str], Sandboxes]) -> None:
    env = sandboxes(variant)
    if case.host_paths and not any(os.path.exists(path) for path in case.host_paths):
        pytest.skip(f"this host has none of {case.host_paths}: the probe would prove nothing")
    if case.slow:
        report = env.slow_results()
        runs = report["results"].get(case.name, [])
        assert runs, f"the slow runner did not run {case.name}: {report}"
        for run in runs:
            assert run["status"] in case.expect, f"{case.name}: {run}"
        assert not report["survivors"], f"processes outlived the slow runs: {report['survivors']}"
        assert report["honest_after"] is None, f"the pool failed an honest run after them: {report['honest_after']}"
        return
    for attempt in range(case.tries):
        before = hostcheck.HostSnapshot.take()
        started = time.monotonic()
        result = env.run(case.request())
        elapsed = time.monotonic() - started
        problems = host_problems(env, before)
        status = str(result.status)
        assert status in case.expect, (
            f"{case.name} (try {attempt + 1}): expected {sorted(case.expect)}, {describe(result)}, took {elapsed:.2f}s"
        )
        if case.reason:
            said = "\n".join([result.message, *(t.message for t in result.tests)])
            assert re.search(case.reason, said), f"{case.name}: not refused the expected way: {describe(result)}"
        assert not problems, f"{case.name}: the host noticed: {problems}"


def test_no_sandbox_file_anywhere_in_the_project() -> None:
    """After every hostile program: no file of a sandbox uid, nor one bearing the
    marker, anywhere in the project (venv and var included) or in /tmp."""
    found = []
    me = os.getuid()
    for root, _dirs, files in os.walk(hostcheck.PROJECT):
        for name in files:
            path = os.path.join(root, name)
            try:
                uid = os.lstat(path).st_uid
            except OSError:
                continue
            if hostcheck.MARKER in name or (uid != me and uid >= 100_000):
                found.append(f"{path} (uid {uid})")
    found += [f"/tmp/{name}" for name in os.listdir("/tmp") if hostcheck.MARKER in name]
    assert not found, found


def test_host_checks_see_what_they_look_for(sandboxes: Callable[[str], Sandboxes]) -> None:
    """The checks above would notice a marker file, a changed key file and a stray
    sandbox-uid process: a check that cannot fail proves nothing."""
    env = sandboxes("bwrap")
    before = hostcheck.HostSnapshot.take()
    marker = Path("/tmp") / f"{hostcheck.MARKER}-selftest"
    marker.write_text("x")
    key = next(iter(before.mtimes))
    before.mtimes[key] -= 1
    try:
        problems = hostcheck.file_problems(before)
    finally:
        marker.unlink()
    assert any(str(marker) in p for p in problems), problems
    assert any(key in p for p in problems), problems
    if os.geteuid() != 0:
        return
    stray = subprocess.Popen(["sleep", "30"], user=65534)
    try:
        survivors = hostcheck.sandbox_survivors(env.pool, env.at_rest, exclude=env.exclude(), wait_s=0.2)
    finally:
        stray.kill()
        stray.wait()
    assert any(str(stray.pid) in p for p in survivors), survivors


def test_read_probe_sees_what_the_sandbox_does_share(sandboxes: Callable[[str], Sandboxes]) -> None:
    """Positive control for the file probes: bwrap shares the host's /usr read-only, so
    the same probe that must fail on the project's files passes on /usr/bin/python3."""
    env = sandboxes("bwrap")
    control = read_case("control_read_usr", os.path.realpath("/usr/bin/python3"))
    result = engine.run(control.request(), backend="bwrap", pool=env.pool)
    assert str(result.status) == PASSED, describe(result)

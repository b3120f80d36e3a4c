"""Whether a sandbox backend can verify anything on this host, found by trying.

A package being present is not enough: bubblewrap installed on a kernel that
forbids unprivileged user namespaces, or an interpreter without pytest, turns
every verdict into `sandbox_error`. So the probe starts one real sandbox, the
way the engine starts them, and runs a correct solution through two suite
kinds in it. `make run` calls it before serving (manage.py sandbox_check);
/healthz, the admin banner and the workers' pool reports read it through a
short cache, so a page view never starts a sandbox of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path

from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.types import Limits, RunRequest

# How long a probe's answer stands before the next caller probes again.
PROBE_TTL_S = float(os.environ.get("SANDBOX_PROBE_TTL_S", "30"))
_SOLUTION = "def add(a, b):\n    return a + b\n"
_CHECKS = (
    ("assertions", ["assert add(1, 2) == 3"]),
    ("pytest", ["from solution import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"]),
)
_LIMITS = Limits(wall_s=10.0, cpu_s=10.0, memory_mb=256)
_REASON_CHARS = 300

_cache: dict[tuple[str | None, ...], tuple[float, str | None]] = {}
_lock = threading.Lock()


def backend_problem(backend: str) -> str | None:
    """Why `backend` cannot start sandboxes on this host, in a few words; None when it can.
    Cheap enough for every report: a PATH lookup, or a Docker ping and an image lookup."""
    if backend == "bwrap":
        if shutil.which("bwrap") is None:
            return "bubblewrap (bwrap) is not installed"
        from evaluation.sandbox.bwrap import DEFAULT_PYTHON

        if not os.access(os.environ.get("SANDBOX_PYTHON", DEFAULT_PYTHON), os.X_OK):
            return "the sandbox interpreter (SANDBOX_PYTHON) is missing"
        return None
    if backend == "docker":
        import docker

        from evaluation.sandbox.docker_backend import IMAGE

        try:
            client = docker.from_env(timeout=3)
        except Exception:
            return "no Docker engine configured"
        try:
            try:
                client.ping()
            except Exception:
                return "the Docker engine does not answer"
            try:
                client.images.get(IMAGE)
            except Exception:
                return f"the sandbox image {IMAGE} is missing"
            return None
        finally:
            client.close()
    return f"unknown sandbox backend {backend!r}"


def backend_probe(backend: str) -> str | None:
    """Why `backend` cannot run a verification on this host, in a sentence; None when it can.

    Steps: the cheap look first (bwrap on the PATH and the sandbox interpreter
    present; or the Docker engine answering with the sandbox image), whose reasons
    are the most precise; then one sandbox started as the engine starts them, whose
    interpreter must import pytest: a correct solution must pass an assertions check
    and a pytest check in it.
    """
    problem = backend_problem(backend)
    if problem is not None:
        return problem
    from evaluation.sandbox.engine import sandbox_factory

    try:
        sandbox = sandbox_factory(backend)(0, 1)
    except ValueError as exc:
        return str(exc)
    try:
        sandbox.start()
    except SandboxFailure as exc:
        return _short(f"a {backend} sandbox does not start: {exc}{_why_bwrap_fails(backend)}")
    except Exception as exc:  # the engine's client library or the OS refusing: name the kind
        return f"a {backend} sandbox does not start: {type(exc).__name__}"
    try:
        for kind, tests in _CHECKS:
            request = RunRequest(
                suite_kind=kind,
                solution=_SOLUTION,
                tests={"setup": "", "visible": [], "hidden": tests},
                entry_point="add",
                limits=_LIMITS,
            )
            try:
                raw = sandbox.execute(request, uuid.uuid4().hex)
            except SandboxFailure as exc:
                return _short(f"a {backend} sandbox started but could not run a {kind} check: {exc}")
            record = raw.get("record") or {}
            if raw.get("anomaly") or record.get("status") != "passed":
                said = raw.get("anomaly") or record.get("message") or record.get("status") or "no result"
                need = " (does the sandbox interpreter have pytest? Debian's python3-pytest)" * (kind == "pytest")
                return _short(f"a correct solution did not pass a {kind} check in a {backend} sandbox: {said}{need}")
    finally:
        sandbox.close()
    return None


def backend_status(backend: str, *, max_age_s: float | None = None) -> str | None:
    """backend_probe's answer, probed again once it is older than `max_age_s`
    (PROBE_TTL_S by default). Cached by what decides it (the backend, where bwrap
    is found, the sandbox interpreter, the image), so a change of those is seen at
    once; one caller probes while the others wait for its answer."""
    ttl = PROBE_TTL_S if max_age_s is None else max_age_s
    key = (
        backend,
        shutil.which("bwrap"),
        os.environ.get("SANDBOX_PYTHON"),
        os.environ.get("SANDBOX_DOCKER_IMAGE"),
        os.environ.get("DOCKER_HOST"),
    )
    with _lock:
        found = _cache.get(key)
        if found is not None and time.monotonic() - found[0] < ttl:
            return found[1]
        problem = backend_probe(backend)
        _cache[key] = (time.monotonic(), problem)
        return problem


def _why_bwrap_fails(backend: str) -> str:
    """What bubblewrap itself says when it cannot build a sandbox here (its stderr, which
    the engine does not keep), and the kernel settings that forbid user namespaces."""
    bwrap = shutil.which("bwrap")
    if backend != "bwrap" or bwrap is None:
        return ""
    from evaluation.sandbox.uids import lease_uid

    # The same identity as a sandbox: as root, the engine drops to a leased uid first,
    # which needs unprivileged user namespaces where root itself would not.
    lease = lease_uid(hint=os.getpid()) if os.geteuid() == 0 else None
    identity = {} if lease is None else {"user": lease.uid, "group": lease.uid, "extra_groups": []}
    command = [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
               "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
               "--proc", "/proc", "--dev", "/dev", "--", "/usr/bin/true"]  # fmt: skip
    said = ""
    try:
        done = subprocess.run(
            command, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=10, check=False,
            **identity,
        )  # fmt: skip
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    except (OSError, subprocess.SubprocessError) as exc:
        said = type(exc).__name__
    finally:
        if lease is not None:
            lease.release()
    hints = [hint for hint in (_sysctl_hint(),) if hint]
    parts = ([f"bwrap says: {said}"] if said else []) + hints
    return f" ({'; '.join(parts)})" if parts else ""


def _sysctl_hint() -> str:
    """The kernel settings known to forbid the user namespaces bubblewrap needs."""
    forbidding = (
        ("user/max_user_namespaces", "0", "user namespaces are disabled: sysctl user.max_user_namespaces=0"),
        ("kernel/unprivileged_userns_clone", "0",
         "unprivileged user namespaces are disabled: sysctl kernel.unprivileged_userns_clone=0"),
        ("kernel/apparmor_restrict_unprivileged_userns", "1",
         "AppArmor restricts unprivileged user namespaces: sysctl kernel.apparmor_restrict_unprivileged_userns=1"),
    )  # fmt: skip
    found = []
    for name, value, words in forbidding:
        try:
            if Path("/proc/sys", name).read_text().strip() == value:
                found.append(words)
        except OSError:
            continue
    return "; ".join(found)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 1] + "…"

"""What every backend's sandbox shares: one warm supervisor behind a frame channel."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from evaluation.sandbox.channel import FrameReader
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.evidence import HOST_OOM
from evaluation.sandbox.harness import protocol
from evaluation.sandbox.harness_files import harness_version
from evaluation.sandbox.types import RunRequest

# Why no greeting came, from how the channel failed (a metrics reason: starts.py).
_GREETING_FAILURES = {"sandbox_died": "channel_closed", "host_deadline": "greeting_timeout", "protocol": "bad_greeting"}


# What one warm sandbox keeps of built programs between runs (base64 text), at most.
HELD_BYTES = 64 << 20


class SupervisorSandbox:
    """A started sandbox holding the harness's supervisor. Backends supply `start`,
    `close`, `alive`, `_write` and the parts of their runtime fingerprint."""

    backend = ""
    reader: FrameReader | None = None
    ready: dict[str, Any]
    runs: int
    _held: dict[str, int] | None = None  # digest -> size of the built programs this sandbox keeps

    @property
    def held(self) -> dict[str, int]:
        """The built programs the supervisor keeps (harness/held_files.py), as the host knows them."""
        if self._held is None:
            self._held = {}
        return self._held

    def _write(self, data: bytes) -> None:
        raise NotImplementedError

    def fingerprint_parts(self) -> list[str]:
        raise NotImplementedError

    @property
    def alive(self) -> bool:
        raise NotImplementedError

    def fingerprint(self) -> str:
        """What the code ran on: backend runtime, interpreter, pytest, hash seed."""
        parts = [
            *self.fingerprint_parts(),
            f"python:{self.ready.get('python')}",
            f"pytest:{self.ready.get('pytest')}",
            f"hash_seed:{self.ready.get('hash_seed')}",
        ]
        return "sha256:" + hashlib.sha256("|".join(parts).encode()).hexdigest()

    def close(self) -> None:
        raise NotImplementedError

    def _held_program(self, program: dict[str, Any]) -> tuple[dict[str, Any], dict[str, int]]:
        """`program` as this sandbox needs it: files it holds by reference, the others in
        full, with those to keep named (harness/held_files.py); and what it will hold."""
        held = self.held
        room = HELD_BYTES - sum(held.values())
        files, refer, keep, kept = {}, {}, [], {}
        for name, data in program["files"].items():
            digest = program["digests"].get(name)
            if digest in held:
                refer[name] = digest
                continue
            files[name] = data
            if digest and len(data) <= room:
                keep.append(name)
                kept[digest] = len(data)
                room -= len(data)
        return {**program, "files": files, "held": refer, "keep": keep}, kept

    def death_evidence(self) -> tuple[str | None, str]:
        """After the channel was lost: what the backend saw of the sandbox's end, as
        (an anomaly that names evidence, evaluation/sandbox/evidence.py, or None; a few
        words for the message). By default nothing more is known."""
        return None, ""

    def _read_greeting(self, what: str, timeout: float) -> None:
        """Read the supervisor's first frame; closes the sandbox and raises if none comes."""
        try:
            self.ready = self.reader.read(time.monotonic() + timeout)
        except SandboxFailure as exc:
            status = self._exit_status() if exc.anomaly == "sandbox_died" else None
            self.close()
            reason = _GREETING_FAILURES.get(exc.anomaly, "other")
            detail = ""
            if status is not None and status < 0:  # a signal: killed from outside, not a failure of its own
                reason, detail = "killed", f" (killed by signal {-status})"
            elif status is not None:
                detail = f" (exited with status {status})"
            raise SandboxFailure(f"{what} did not come up: {exc}{detail}", anomaly="start_failed",
                                 reason=reason) from exc  # fmt: skip
        self._check_greeting(what)

    def _exit_status(self) -> int | None:
        """How a sandbox that closed its channel before greeting ended, where the backend
        can tell: an exit status, or minus the signal that killed it."""
        return None

    def _check_greeting(self, what: str) -> None:
        """The first frame must be a ready greeting from the harness this host has."""
        if self.ready.get("op") != "ready" or self.ready.get("harness") != harness_version():
            self.close()
            reason = "setup_failed" if self.ready.get("op") == "setup_failed" else "bad_greeting"
            raise SandboxFailure(f"unexpected greeting from {what}: {self.ready}", anomaly="start_failed",
                                 reason=reason)  # fmt: skip

    def _send(self, message: dict[str, Any]) -> None:
        if not self.alive:
            raise SandboxFailure(f"the {self.backend} sandbox is not running", anomaly="sandbox_died")
        try:
            self._write(protocol.encode_frame(message))
        except OSError as exc:
            raise SandboxFailure(f"could not write to the sandbox: {exc}", anomaly="sandbox_died") from exc

    def ping(self, timeout: float = 2.0) -> bool:
        try:
            self._send({"op": "ping"})
            return self.reader.read(time.monotonic() + timeout).get("op") == "pong"
        except (SandboxFailure, OSError):
            return False

    def execute(self, request: RunRequest, run_id: str) -> dict[str, Any]:
        """Send one run (the run frame, then the tests frame) and return the supervisor's
        result; `host_oom` where the sandbox's memory cgroups show the host's OOM killer
        struck it meanwhile (memory_cgroups.py), whatever the supervisor said."""
        cgroup = getattr(self, "memory_cgroup", None)
        before = cgroup.counts() if cgroup is not None else None
        try:
            result = self._execute(request, run_id)
        except SandboxFailure as exc:
            struck = cgroup.host_oom_since(before) if cgroup is not None and before is not None else ""
            if struck:
                raise SandboxFailure(f"{struck} ({exc})", anomaly=HOST_OOM) from exc
            raise
        struck = cgroup.host_oom_since(before) if cgroup is not None and before is not None else ""
        if struck:
            result["detail"] = f"{struck} ({result.get('anomaly') or 'no anomaly'})"
            result["anomaly"] = HOST_OOM
        return result

    def _execute(self, request: RunRequest, run_id: str) -> dict[str, Any]:
        frame = request.run_frame(run_id)
        kept: dict[str, int] = {}
        if isinstance(frame.get("program"), dict) and frame["program"].get("digests"):
            frame["program"], kept = self._held_program(frame["program"])
        self._send(frame)
        self._send(request.tests_frame())
        result = self.reader.read(time.monotonic() + request.limits.wall_s + 30.0)
        self.runs += 1
        if result.get("op") == "result" and result.get("anomaly") is None:
            self.held.update(kept)  # the supervisor has them now (harness/held_files.py)
        if result.get("op") != "result" or result.get("run_id") != run_id:
            raise SandboxFailure(f"the sandbox answered out of turn: {str(result)[:200]}", anomaly="protocol")
        return result

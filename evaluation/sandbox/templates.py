"""Fresh bwrap sandboxes forked from a template instead of started by exec.

A cold run wants a sandbox that has seen nothing else. Started by exec, one costs
bwrap, a new interpreter and the harness's imports: about twice a bare `python3`
spawn. A template (evaluation/sandbox/harness/fresh.py) is a bwrap sandbox that has paid
those once and only ever forks: each fresh sandbox is a child of it in new user,
mount, PID, network, IPC, UTS and cgroup namespaces, with its own /proc, its own
empty /scratch, /tmp and /dev/shm, no capabilities and no_new_privs, running a
supervisor as its PID 1. Closing one kills that PID 1, and with it the whole namespace.

Templates are kept per hash seed and interpreter (both fixed when an interpreter
starts) on a small shelf, and each serves one fresh sandbox at a time, so the
per-uid limits of its uid bind one run alone. When templates cannot work here
(no nested user namespaces, say), the engine falls back to exec; see engine.py.
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import subprocess
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evaluation.sandbox.base import SupervisorSandbox
from evaluation.sandbox.bwrap import SCRATCH_BYTES, bwrap_command, launch, sandbox_python, stop
from evaluation.sandbox.channel import FrameReader, wait_readable
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.harness import lite, protocol
from evaluation.sandbox.harness_files import harness_version, readable_copy
from evaluation.sandbox.memory_cgroups import SandboxCgroup
from evaluation.sandbox.uids import UidLease

START_TIMEOUT_S = 20.0
REFUSALS = {0, errno.EPERM, errno.EACCES, errno.EINVAL, errno.ENOSYS}
CONTROL_TIMEOUT_S = 15.0
log = logging.getLogger("evaluation.runs")
_slots = itertools.count(10_000)


class SandboxTemplate:
    """One template: a bwrap sandbox that forks fresh sandboxes, one at a time."""

    def __init__(self, hash_seed: int, python: str) -> None:
        self.hash_seed = hash_seed
        self.python = python
        self.key = (hash_seed, python)
        self.slot = next(_slots)
        self.process: Any = None
        self.ctl: lite.Socket | None = None
        self.uid_lease: UidLease | None = None
        self.memory_cgroup: SandboxCgroup | None = None
        self.lock = threading.Lock()
        self.generation = 0

    def start(self) -> SandboxTemplate:
        command = bwrap_command(harness=str(readable_copy()), python=self.python, hash_seed=self.hash_seed,
                                warm=False, template=True)  # fmt: skip
        self.ctl, theirs = lite.socketpair(lite.SOCK_SEQPACKET)
        try:
            # stdout: nothing of the host's (its log pipe, say) reaches the template or its forks
            self.process, self.uid_lease, self.memory_cgroup = launch(
                command, slot=self.slot, stdin=theirs.fileno(), stdout=subprocess.DEVNULL
            )
        finally:
            theirs.close()
        try:
            greeting = self._receive(START_TIMEOUT_S)
        except SandboxFailure as exc:
            self.close()
            raise SandboxFailure(
                f"the sandbox template did not come up: {exc}", anomaly="start_failed", reason="template_failed"
            ) from exc
        if greeting.get("op") != "ready" or greeting.get("harness") != harness_version():
            self.close()
            message = f"unexpected greeting from a sandbox template: {greeting}"
            raise SandboxFailure(message, anomaly="start_failed", reason="bad_greeting")
        return self

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def fork(self, stdin_fd: int, stdout_fd: int, peer_fd: int | None = None) -> int:
        """A fresh sandbox on these descriptors (and a peer: an interactive run's other
        side, harness/suite_interactive.py); returns its id for `kill`."""
        fds = [stdin_fd, stdout_fd] + ([peer_fd] if peer_fd is not None else [])
        reply = self._request({"op": "fresh"}, fds)
        if reply.get("op") != "forked":
            message = f"the sandbox template refused a fresh sandbox: {reply}"
            raise SandboxFailure(message, anomaly="start_failed", reason="template_failed")
        return int(reply["id"])

    def kill(self, sandbox_id: int) -> None:
        """Kill a fresh sandbox and everything in it; returns once all are reaped."""
        reply = self._request({"op": "kill", "id": sandbox_id}, [])
        if reply.get("op") != "killed":
            raise SandboxFailure(f"the sandbox template could not kill {sandbox_id}: {reply}", anomaly="protocol")

    def _request(self, message: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        with self.lock:
            if not self.alive or self.ctl is None:
                message = "the sandbox template is not running"
                raise SandboxFailure(message, anomaly="start_failed", reason="template_failed")
            return request_control(self.ctl, message, fds, who="the sandbox template", anomaly="start_failed",
                                   reason="template_failed")  # fmt: skip

    def _receive(self, timeout: float) -> dict[str, Any]:
        return receive_control(self.ctl, timeout, who="the sandbox template")

    def close(self) -> None:
        process, self.process = self.process, None
        if self.memory_cgroup is not None:
            self.memory_cgroup.close()  # its counters' descriptors (read again, they reopen)
        if self.ctl is not None:
            self.ctl.close()
            self.ctl = None
        if process is not None:
            stop(process)  # the template's PID namespace goes with it, and every fresh sandbox in it
        if self.uid_lease is not None:
            self.uid_lease.release()
            self.uid_lease = None


def request_control(ctl: lite.Socket, message: dict[str, Any], fds: list[int], *, who: str, anomaly: str,
                    reason: str = "") -> dict[str, Any]:  # fmt: skip
    """Send a control message (with `fds`) to a template or a family's holder (`who`)
    and return its answer; a channel that will not take it is a SandboxFailure with
    `anomaly` and `reason`. The caller holds the lock that keeps exchanges whole."""
    try:
        lite.send_fds(ctl, [lite.dumps(message).encode()], fds)
    except OSError as exc:
        raise SandboxFailure(f"could not reach {who}: {exc}", anomaly=anomaly, reason=reason) from exc
    return receive_control(ctl, CONTROL_TIMEOUT_S, who=who)


def receive_control(ctl: lite.Socket, timeout: float, *, who: str) -> dict[str, Any]:
    """The next control message (one SEQPACKET packet of JSON) from a template or a
    session family's holder (`who`), within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise SandboxFailure(f"{who} did not answer in time", anomaly="host_deadline")
        if wait_readable(ctl.fileno(), remaining):
            try:
                data = ctl.recv(65536)
            except OSError:  # reset: it was killed mid-request (from outside)
                data = b""
            if not data:
                raise SandboxFailure(f"{who} closed its channel", anomaly="sandbox_died")
            return lite.loads(data)


class ForkedSandbox(SupervisorSandbox):
    """A fresh sandbox from a template: a cold sandbox, for one run, then gone."""

    backend = "bwrap"

    def __init__(self, template: SandboxTemplate, peer_fd: int | None = None) -> None:
        self.template = template
        self.peer_fd = peer_fd
        self.id = f"bwrap-{uuid.uuid4().hex[:12]}"
        self.child: int | None = None
        self.reader: FrameReader | None = None
        self.ready: dict[str, Any] = {}
        self.runs = 0
        self.stdin_w = -1
        self.stdout_r = -1
        self.template_healthy = True
        self.closed = False

    def start(self) -> ForkedSandbox:
        stdin_r, self.stdin_w = os.pipe()
        self.stdout_r, stdout_w = os.pipe()
        try:
            self.child = self.template.fork(stdin_r, stdout_w, self.peer_fd)
        except SandboxFailure:
            self.template_healthy = False  # it refused or is gone: not one to keep
            self.close()
            raise
        finally:
            os.close(stdin_r)
            os.close(stdout_w)
        self.reader = FrameReader(self.stdout_r)
        self._read_greeting("the fresh sandbox", START_TIMEOUT_S)
        return self

    @property
    def alive(self) -> bool:
        return self.child is not None and self.template.alive

    @property
    def memory_cgroup(self) -> SandboxCgroup | None:
        """The template's: it serves one fresh sandbox at a time, and they share its uid."""
        return self.template.memory_cgroup

    def fingerprint_parts(self) -> list[str]:
        return ["bwrap", f"scratch:{SCRATCH_BYTES}"]  # the same runtime as a sandbox started by exec

    def _write(self, data: bytes) -> None:
        protocol.write_all(self.stdin_w, data)

    def close(self) -> None:
        """Kill everything in this sandbox, then hand its template back (once)."""
        if self.closed:
            return
        self.closed = True
        child, self.child = self.child, None
        for fd in (self.stdin_w, self.stdout_r):
            if fd >= 0:
                os.close(fd)
        self.stdin_w = self.stdout_r = -1
        if child is not None:
            try:
                self.template.kill(child)
            except SandboxFailure as exc:
                self.template_healthy = False
                log.warning("retiring sandbox template %s: %s", self.template.pid, exc)
        shelf.give_back(self.template, healthy=self.template_healthy)


class TemplateShelf:
    """Idle templates by hash seed and interpreter, the least recently used given up first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.idle: OrderedDict[tuple[int, str], list[SandboxTemplate]] = OrderedDict()
        self.lock = threading.Lock()
        self.unsupported = ""  # why fresh sandboxes cannot be made here, once seen
        self.generation = 0
        self.starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-templates")
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        """In a forked child (a prefork worker): the parent's templates and starter
        thread are the parent's. Leave them be and start afresh."""
        self.idle = OrderedDict()
        self.lock = threading.Lock()
        self.starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-templates")
        self.generation += 1

    def take(self, hash_seed: int) -> SandboxTemplate:
        key = (hash_seed, sandbox_python())  # both are fixed when a template starts
        with self.lock:
            waiting = self.idle.pop(key, [])
            while waiting:
                template = waiting.pop()
                if template.alive:
                    if waiting:  # no empty list is left behind: give_back counts on it
                        self.idle[key] = waiting
                    return template
                template.close()
        # Started from one long-lived thread: bwrap dies with the thread that started it
        # (--die-with-parent is PR_SET_PDEATHSIG, which follows the thread, not the
        # process), and a template outlives the run, and often the thread, it was made for.
        template = self.starter.submit(lambda: SandboxTemplate(*key).start()).result()
        template.generation = self.generation
        return template

    def give_back(self, template: SandboxTemplate, *, healthy: bool) -> None:
        to_close: list[SandboxTemplate] = []
        with self.lock:
            if not healthy or not template.alive or template.generation != self.generation:
                to_close.append(template)  # broken, or lent out before the shelf was last closed
            else:
                self.idle.setdefault(template.key, []).append(template)
                self.idle.move_to_end(template.key)
                while sum(len(waiting) for waiting in self.idle.values()) > self.limit:
                    key, oldest = next((k, waiting) for k, waiting in self.idle.items() if waiting)
                    to_close.append(oldest.pop(0))
                    if not oldest:
                        del self.idle[key]
        for extra in to_close:
            extra.close()

    def idle_templates(self) -> list[SandboxTemplate]:
        with self.lock:
            return [t for templates in self.idle.values() for t in templates]

    def close(self) -> None:
        """Close the idle templates; those lent out are closed when they come back."""
        with self.lock:
            templates = [t for ts in self.idle.values() for t in ts]
            self.idle.clear()
            self.generation += 1
        for template in templates:
            template.close()


shelf = TemplateShelf(limit=int(os.environ.get("SANDBOX_FRESH_TEMPLATES", "0")) or (os.cpu_count() or 1))


def fresh_sandbox(hash_seed: int, peer_fd: int | None = None) -> ForkedSandbox:
    """A started fresh sandbox for one run (with `peer_fd` as its peer: the other side
    of an interactive run); SandboxFailure if none can be made."""
    if shelf.unsupported:
        raise SandboxFailure(shelf.unsupported, anomaly="start_failed", reason="setup_failed")
    template = shelf.take(hash_seed)
    sandbox = ForkedSandbox(template, peer_fd)
    try:
        return sandbox.start()
    except SandboxFailure as exc:
        if sandbox.ready.get("op") == "setup_failed" and sandbox.ready.get("errno") in REFUSALS:
            # The kernel said no (nested user namespaces off, a seccomp policy...), or the
            # privileges would not drop (errno 0): it will say so again. Not a full table.
            shelf.unsupported = f"fresh sandboxes are not possible here: {sandbox.ready.get('detail')}"
            log.warning("%s; cold runs start sandboxes by exec", shelf.unsupported)
        raise exc

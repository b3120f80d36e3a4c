"""Who owns a Docker sandbox, and whether that owner is still alive.

Every process that starts Docker sandboxes has an owner id of its own,
`<hostname>:<pid>:<random>`, drawn when it first needs one and drawn again in a
forked child. The host name and pid are there for a human reading `docker ps`;
the random part is what makes the id unique. Neither of the others can be
trusted to: replicas in containers that share one engine often share a host
name pattern, and each sees itself as pid 1 (or the same small pid), in a pid
namespace that the other replicas cannot look into.

So liveness is not read from the host's process table but from a heartbeat the
owner publishes while it lives, where every process that can reap the owner's
containers sees it: in the Docker engine itself, the one thing all of them
share, present wherever this backend runs. (A file in a shared directory, the
platform's database or Redis would each need a deployment to provide it, and the
sandbox layer imports nothing of Django.) Container labels cannot change once
set, and a volume cannot be touched through the API, so a heartbeat is an empty
volume, labelled with its owner, that the owner creates afresh every few seconds
(removing the one before): its `CreatedAt` is stamped by the engine, and read
against the engine's own clock (`SystemTime`), so the clocks of replicas on
other machines never enter into it. An owner whose newest heartbeat is older
than `owner_ttl_s()` is dead, and the reaper removes its containers.
"""

from __future__ import annotations

import itertools
import logging
import os
import secrets
import socket
import threading
from datetime import datetime
from typing import Any

log = logging.getLogger("evaluation.runs")

LABEL = "org.taskplatform.sandbox"
BEAT_LABEL = f"{LABEL}.heartbeat"  # on heartbeat volumes only; containers carry LABEL
DEFAULT_OWNER_TTL_S = 120.0
MAX_BEAT_EVERY_S = 15.0

_lock = threading.Lock()
_owner: str | None = None
_beating: Heartbeat | None = None


def owner_ttl_s() -> float:
    """How long an owner's heartbeat stays fresh (SANDBOX_OWNER_TTL_S, default two
    minutes): an owner beats every quarter of it (at most every 15 s), so it must
    miss three beats in a row before it counts as dead. Short only in tests."""
    return float(os.environ.get("SANDBOX_OWNER_TTL_S", "0") or 0) or DEFAULT_OWNER_TTL_S


def beat_every_s() -> float:
    return min(MAX_BEAT_EVERY_S, owner_ttl_s() / 4)


def owner_id() -> str:
    """This process's owner id, `<hostname>:<pid>:<random>`.

    SANDBOX_OWNER_HOST and SANDBOX_OWNER_PID replace the host name and pid written
    into it. They are for tests, which simulate replicas that share a host name and
    a pid (containers on one engine, each its own pid 1) with plain processes."""
    global _owner
    with _lock:
        if _owner is None:
            host = os.environ.get("SANDBOX_OWNER_HOST") or socket.gethostname()
            pid = os.environ.get("SANDBOX_OWNER_PID") or str(os.getpid())
            _owner = f"{host}:{pid}:{secrets.token_hex(8)}"
        return _owner


def _forget_in_child() -> None:
    """A forked child is another owner: a new id, and no heartbeat thread (threads do
    not survive a fork) until it starts sandboxes of its own."""
    global _owner, _beating, _lock
    _lock = threading.Lock()  # the parent may have held it at the fork
    _owner = None
    _beating = None


os.register_at_fork(after_in_child=_forget_in_child)


class Heartbeat:
    """The thread that keeps this process's heartbeat fresh while the process lives."""

    def __init__(self, owner: str, client_factory: Any) -> None:
        self.owner = owner
        self._client_factory = client_factory
        self._client: Any = None
        self._token = owner.rsplit(":", 1)[1]
        self._count = itertools.count()
        self._current: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="docker-owner-heartbeat", daemon=True)

    def beat(self) -> None:
        """Create the next heartbeat volume, then remove the previous one: there is
        always one, and a reaper that lists between the two sees both."""
        if self._client is None:
            self._client = self._client_factory()
        name = f"{LABEL}.heartbeat.{self._token}.{next(self._count)}"
        self._client.volumes.create(name=name, labels={BEAT_LABEL: "1", f"{LABEL}.owner": self.owner})
        previous, self._current = self._current, name
        if previous is not None:
            _remove_volume(self._client, previous)

    def start(self) -> Heartbeat:
        self.beat()  # before the first container: no reaper ever sees one without it
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop beating (tests); the last heartbeat is left to expire."""
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(beat_every_s()):
            try:
                self.beat()
            except Exception as exc:  # the engine down or slow: try again at the next beat
                self._client = None
                log.warning("docker sandbox owner %s could not renew its heartbeat: %s", self.owner, exc)


def heartbeat_ensure(client_factory: Any) -> str:
    """Start this process's heartbeat if it is not running yet (the first beat is
    written before this returns); return the owner id to label containers with."""
    global _beating
    owner = owner_id()
    with _lock:
        if _beating is None or _beating.owner != owner:
            _beating = Heartbeat(owner, client_factory).start()
    return owner


def heartbeat_stop() -> None:
    """Stop this process's heartbeat (tests simulate a silent owner with it)."""
    global _beating
    with _lock:
        beating, _beating = _beating, None
    if beating is not None:
        beating.stop()


def heartbeat_ages(client: Any) -> tuple[dict[str, float], dict[str, list[str]]]:
    """How long ago, by the engine's clock, each owner last beat (its newest
    heartbeat's age in seconds), and the names of each owner's heartbeat volumes."""
    now = _engine_time(client.info()["SystemTime"])
    ages: dict[str, float] = {}
    volumes: dict[str, list[str]] = {}
    for volume in client.volumes.list(filters={"label": BEAT_LABEL}):
        attrs = volume.attrs or {}
        owner = (attrs.get("Labels") or {}).get(f"{LABEL}.owner", "")
        created = attrs.get("CreatedAt") or ""
        volumes.setdefault(owner, []).append(volume.name)
        try:
            age = max(0.0, now - _engine_time(created))
        except ValueError:
            continue  # no readable time: not a beat anyone can count on
        ages[owner] = min(age, ages.get(owner, age))
    return ages, volumes


def heartbeats_prune(client: Any, names: list[str]) -> None:
    for name in names:
        _remove_volume(client, name)


def _engine_time(text: str) -> float:
    """Seconds since the epoch of an engine timestamp: RFC 3339, `Z` or an offset,
    with up to nine digits of fractions (more than `fromisoformat` reads)."""
    text = text.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    head, sep, tail = text.partition(".")
    if sep:
        digits = len(tail) - len(tail.lstrip("0123456789"))
        text = f"{head}.{tail[:digits][:6].ljust(6, '0')}{tail[digits:]}"
    return datetime.fromisoformat(text).timestamp()


def _remove_volume(client: Any, name: str) -> None:
    try:
        client.api.remove_volume(name, force=True)
    except Exception:  # noqa: S110 - removed already, by its owner or a reaper
        pass

"""The session host agent: one process per sandbox host owning its sessions, spoken to
in JSON over HTTP on a Unix socket (or called in-process, `Agent.handle`, where the
web app runs the sessions itself).

It holds the prepared environments and the live sessions, reaps expired and idle
ones every few seconds, and at start-up kills what a crashed agent's sandboxes left
running as sandbox uids (their bwrap processes die with the agent that started them).
It imports no Django: a sandbox host runs it alone.

    python -m evaluation.sandbox.sessions.agent --socket /run/taskplatform/sessions.sock

Routes (bodies and answers are JSON; errors are {"error": {code, message, details}}):
    GET    /health                      the host's counters
    POST   /environments                {files: {path: {data (base64), executable}}, setup_commands}
    GET    /environments/<digest>       the environment's metadata, or 404
    POST   /sessions                    {environment, limits?, verdict?, statement?, id?}
    GET    /sessions/<id>               the transcript
    POST   /sessions/<id>/steps         {seq, action, timeout_s?}
    POST   /sessions/<id>/fork          {n}
    POST   /sessions/<id>/submit
    POST   /sessions/<id>/renew
    DELETE /sessions/<id>
    POST   /reap
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import socketserver
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from evaluation.sandbox.sessions.environments import (
    DEFAULT_ROOT,
    EnvironmentCache,
    EnvironmentSpec,
    PreparationFailed,
)
from evaluation.sandbox.sessions.host import HostFull, SessionHost, SessionNotFound
from evaluation.sandbox.sessions.limits import LimitsInvalid, SessionLimits, limits_from
from evaluation.sandbox.sessions.session import (
    ActionInvalid,
    LimitReached,
    SeqConflict,
    Session,
    SessionError,
    SessionInfraFailure,
    StateConflict,
)
from evaluation.sandbox.sessions.verdict import VerdictSpec

log = logging.getLogger(__name__)
MAX_BODY = 64 * 1024 * 1024
REAP_EVERY_S = 5.0
STATUS = {
    ActionInvalid: 400, LimitsInvalid: 400, SeqConflict: 409, StateConflict: 409, LimitReached: 409,
    SessionNotFound: 404, HostFull: 429, SessionInfraFailure: 503,
}  # fmt: skip


class BadRequest(SessionError):
    code = "invalid"


class EnvironmentMissing(SessionNotFound):
    code = "environment_missing"


def _error(status: int, code: str, message: str, details: dict | None = None) -> tuple[int, dict]:
    return status, {"error": {"code": code, "message": message, "details": details or {}}}


def summary(session: Session) -> dict[str, Any]:
    return {"id": session.id, "state": session.state, "reason": session.state_reason, "parent": session.parent_id,
            "environment": session.environment.digest, "lease_expires_at": session.lease_expires_at,
            "steps": len(session.steps), "last_hash": session.last_hash,
            "first_observation": session.first_observation}  # fmt: skip


def verdict_spec_from(data: Any) -> VerdictSpec | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise BadRequest("verdict: expected an object")
    try:
        return VerdictSpec(fail_to_pass=tuple(data["fail_to_pass"]), pass_to_pass=tuple(data.get("pass_to_pass", ())),
                           hidden=dict(data.get("hidden") or {}), protected=tuple(data.get("protected", ())),
                           timeout_s=float(data.get("timeout_s", 300.0)))  # fmt: skip
    except (KeyError, TypeError, ValueError) as exc:
        raise BadRequest(f"verdict: {exc}") from exc


class Agent:
    def __init__(self, *, environments: Path = DEFAULT_ROOT, max_sessions: int = 64,
                 base_limits: SessionLimits | None = None, backend: str = "bwrap",
                 spares: int = 2) -> None:  # fmt: skip
        self.cache = EnvironmentCache(environments)
        self.host = SessionHost(max_sessions=max_sessions, backend=backend, spares=spares, environments=self.cache)
        self.base_limits = base_limits or SessionLimits()
        self.stopping = threading.Event()
        self.reaper: threading.Thread | None = None

    def start_reaper(self, on_reaped: Any = None) -> None:
        """Reclaim what a crashed host left, then reap every REAP_EVERY_S; `on_reaped`
        hears of each session the reaper closed ((id, state, reason) tuples)."""
        from evaluation.sandbox.uids import reap_orphaned_uids

        killed = reap_orphaned_uids()
        self.host.counters["reclaimed_at_start"] += killed
        if killed:
            log.warning("killed %d processes a crashed session host left running", killed)

        def loop() -> None:
            while not self.stopping.wait(REAP_EVERY_S):
                try:
                    self.host.reap()
                    if on_reaped is not None and self.host.last_reaped:
                        on_reaped(self.host.last_reaped)
                except Exception:  # a reaper that dies would leak every session after it
                    log.exception("session reaper")

        self.reaper = threading.Thread(target=loop, name="session-reaper", daemon=True)
        self.reaper.start()

    def shutdown(self) -> None:
        self.stopping.set()
        self.host.shutdown()

    # -- routing ---------------------------------------------------------------------------------

    def handle(self, method: str, path: str, body: Any = None) -> tuple[int, dict]:
        """Answer one request: (HTTP status, JSON body)."""
        parts = [part for part in path.split("?")[0].split("/") if part]
        try:
            return self._route(method, parts, body if body is not None else {})
        except HostFull as exc:
            return _error(429, exc.code, str(exc), exc.details)
        except SessionError as exc:
            status = next((code for kind, code in STATUS.items() if isinstance(exc, kind)), 400)
            return _error(status, exc.code, str(exc), exc.details)
        except LimitsInvalid as exc:
            return _error(400, "invalid_limits", str(exc))
        except PreparationFailed as exc:
            return _error(422, "setup_failed", str(exc), {"log": exc.log[-20000:]})
        except ValueError as exc:
            return _error(400, "invalid", str(exc))

    def _route(self, method: str, parts: list[str], body: Any) -> tuple[int, dict]:
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        match method, parts:
            case "GET", ["health"]:
                return 200, self.host.stats()
            case "POST", ["reap"]:
                return 200, self.host.reap()
            case "POST", ["environments"]:
                return 200, self._prepare(body)
            case "GET", ["environments", digest]:
                found = self.cache.find(digest)
                if found is None:
                    return _error(404, "environment_missing", f"no environment {digest} on this host")
                return 200, found.meta()
            case "POST", ["sessions"]:
                return 201, self._create(body)
            case "GET", ["sessions", session_id]:
                return 200, self.host.get(session_id).transcript()
            case "DELETE", ["sessions", session_id]:
                return 200, summary(self.host.close(session_id))
            case "POST", ["sessions", session_id, "steps"]:
                session = self.host.get(session_id)
                return 200, session.execute(seq=body.get("seq"), action=body.get("action"),
                                            timeout_s=body.get("timeout_s"))  # fmt: skip
            case "POST", ["sessions", session_id, "fork"]:
                children = self.host.fork(session_id, body.get("n"))
                return 201, {"sessions": [summary(child) for child in children]}
            case "POST", ["sessions", session_id, "submit"]:
                session = self.host.get(session_id)
                verdict = session.submit().as_dict()  # first: the summary must say where it left the session
                return 200, {**summary(session), "verdict": verdict}
            case "POST", ["sessions", session_id, "renew"]:
                session = self.host.get(session_id)
                session.renew()
                return 200, summary(session)
        return _error(404, "not_found", f"no route {method} /{'/'.join(parts)}")

    def _prepare(self, body: dict) -> dict:
        files = body.get("files")
        if not isinstance(files, dict) or not files:
            raise BadRequest("files: expected an object of path -> {data (base64), executable}")
        decoded: dict[str, bytes | tuple[bytes, bool]] = {}
        for path, entry in files.items():
            try:
                decoded[path] = (base64.b64decode(entry["data"], validate=True), bool(entry.get("executable")))
            except (KeyError, TypeError, ValueError) as exc:
                raise BadRequest(f"files[{path!r}]: expected {{data: base64, executable: bool}} ({exc})") from exc
        commands = body.get("setup_commands") or []
        if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
            raise BadRequest("setup_commands: expected a list of strings")
        environment = self.cache.get(EnvironmentSpec(files=decoded, setup_commands=tuple(commands)))
        return environment.meta()

    def _create(self, body: dict) -> dict:
        environment = self.cache.find(str(body.get("environment", "")))
        if environment is None:
            raise EnvironmentMissing(f"no environment {body.get('environment')} on this host: prepare it first")
        limits = limits_from(body.get("limits"), base=self.base_limits)
        session = self.host.create(environment=environment, limits=limits, verdict_spec=verdict_spec_from(
            body.get("verdict")), statement=str(body.get("statement", "")), session_id=body.get("id"))  # fmt: skip
        return summary(session)


# -- HTTP on a Unix socket ------------------------------------------------------------------------


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def _handler(agent: Agent) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                status, payload = _error(413, "too_large", f"a body of {length} bytes is over {MAX_BODY}")
            else:
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    status, payload = _error(400, "invalid_json", "the body is not JSON")
                else:
                    status, payload = agent.handle(self.command, self.path, body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            log.debug(format, *args)

    return Handler


def serve(agent: Agent, socket_path: Path) -> _Server:
    """Listen on `socket_path` (owner-only) in a thread of its own; returns the server."""
    socket_path.parent.mkdir(parents=True, exist_ok=True)
    if socket_path.exists():
        socket_path.unlink()
    server = _Server(str(socket_path), _handler(agent))
    os.chmod(socket_path, 0o600)
    threading.Thread(target=server.serve_forever, name="session-agent", daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description="The session host agent.")
    parser.add_argument("--socket", type=Path, required=True)
    parser.add_argument("--environments", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--max-sessions", type=int, default=64)
    parser.add_argument("--backend", choices=("bwrap", "docker"), default="bwrap")
    parser.add_argument("--spares", type=int, default=2, help="warm sandboxes kept per environment in use")
    args = parser.parse_args()
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO"))
    agent = Agent(environments=args.environments, max_sessions=args.max_sessions, backend=args.backend,
                  spares=args.spares)  # fmt: skip
    agent.start_reaper()
    server = serve(agent, args.socket)
    log.info("session agent on %s (%s, %d sessions at most)", args.socket, args.backend, args.max_sessions)
    try:
        agent.stopping.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        agent.shutdown()


if __name__ == "__main__":
    main()

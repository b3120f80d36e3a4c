"""Agent sessions: create (idempotent by key), step (idempotent by seq), fork, submit,
renew, close; each a call to the session host and the record kept here.

The host decides (states, limits, the verdict); the rows mirror what it answered, so
that the transcript outlives the sandbox and a retried request is answered from
here without reaching the host again.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.module_loading import import_string

from evaluation.models import FINAL_SESSION_STATES, AgentSession, SessionStep
from evaluation.verification.sessions import specs
from evaluation.verification.sessions.link import call, host_name
from tasks_app.errors import Conflict, DomainError, NotFound, PermissionDenied, TooBusy, ValidationFailed
from tasks_app.models import TaskVersion

MAX_KEY_CHARS = 200
# How long the host may take over a verdict, beyond the tests' own timeout.
SUBMIT_MARGIN_S = 120.0


class SessionFailed(DomainError):
    """The session host failed the session (a sandbox died): never the episode's fault."""

    code = "sandbox_error"
    status = 503


class SetupFailed(DomainError):
    """The task's own setup commands failed on the host: the task is broken, not the caller."""

    code = "setup_failed"
    status = 422


def _when(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def _raise_for(status: int, payload: dict[str, Any], session: AgentSession | None = None) -> None:
    """Turn the host's error answer into the platform's error, recording what it says
    about the session (a sandbox that failed, a session the host no longer holds)."""
    error = payload.get("error") or {}
    code = error.get("code", "error")
    message = error.get("message", "the session host refused")
    details = error.get("details") or {}
    if status == 429:
        raise TooBusy(message, retry_after=max(1, round(float(details.get("retry_after_s", 5)))))
    if session is not None and (status == 503 or (status == 404 and code == "not_found")):
        reason = message if status == 503 else "the session host no longer holds this session (it restarted)"
        AgentSession.objects.filter(pk=session.pk).exclude(state__in=FINAL_SESSION_STATES).update(
            state="failed", reason=reason
        )
        raise SessionFailed(reason)
    if status == 503:
        raise SessionFailed(message)
    if status == 422 and code == "setup_failed":
        raise SetupFailed(message, details=details)
    kind = {400: ValidationFailed, 404: NotFound, 409: Conflict}.get(status, DomainError)
    raise kind(message, details=details, code=code)


def _live_count(user: Any) -> int:
    return AgentSession.objects.filter(user=user).exclude(state__in=FINAL_SESSION_STATES).count()


def _mirror(session: AgentSession, summary: dict[str, Any]) -> None:
    """The host's word on a session, written to its row."""
    session.state = summary["state"]
    session.reason = summary.get("reason", "")
    session.lease_expires_at = _when(summary["lease_expires_at"])
    session.step_count = summary.get("steps", session.step_count)
    session.last_hash = summary.get("last_hash", session.last_hash)
    if summary.get("first_observation"):
        session.first_observation = summary["first_observation"]


def _ensure_environment(version: TaskVersion) -> str:
    digest = specs.digest_of(version)
    status, _meta = call("GET", f"/environments/{digest}")
    if status == 404:
        status, payload = call("POST", "/environments", specs.environment_body(version), timeout_s=900.0)
        if status != 200:
            _raise_for(status, payload)
        if payload["digest"] != digest:  # the host's interpreter differs from ours: use its key
            digest = payload["digest"]
    return digest


def session_create(*, user: Any, version_hash: str, limits: Any = None, lease_s: Any = None,
                   idempotency_key: str = "", job_id: int | None = None,
                   token: Any = None) -> tuple[AgentSession, bool]:  # fmt: skip
    """A new session on the version, or the one this key made before (created: False)."""
    if not isinstance(idempotency_key, str) or len(idempotency_key) > MAX_KEY_CHARS:
        raise ValidationFailed.naming({"Idempotency-Key": [f"At most {MAX_KEY_CHARS} characters."]})
    if idempotency_key:
        existing = AgentSession.objects.filter(user=user, idempotency_key=idempotency_key).first()
        if existing is not None:
            return existing, False
    if not isinstance(version_hash, str) or not version_hash:
        raise ValidationFailed.naming({"version_hash": ["The content hash of a repository task's version."]})
    version = TaskVersion.objects.select_related("task").filter(content_hash=version_hash).first()
    if version is None:
        raise NotFound(f"no version with hash {version_hash}", details={"version_hash": [version_hash]})
    guard = settings.SESSIONS.get("VERSION_GUARD")
    refused = import_string(guard)(token=token, version_hash=version_hash) if guard else None
    if refused:
        raise PermissionDenied(refused, details={"version_hash": [refused]})
    if limits is not None and not isinstance(limits, dict):
        raise ValidationFailed.naming({"limits": ["An object of limit names to numbers."]})
    limits = dict(limits or {})
    if lease_s is not None:
        limits["lease_s"] = lease_s
    quota = settings.SESSIONS["MAX_SESSIONS_PER_USER"]
    if _live_count(user) >= quota:
        raise TooBusy(f"you hold {quota} live sessions, your most; close some first", retry_after=5)
    digest = _ensure_environment(version)
    session_id = uuid.uuid4().hex
    try:
        with transaction.atomic():
            session = AgentSession.objects.create(
                id=session_id, version=version, user=user, job_id=job_id, idempotency_key=idempotency_key,
                environment=digest, limits=limits, lease_expires_at=datetime.now(tz=UTC), host=host_name(),
            )  # fmt: skip
    except IntegrityError:  # the same key, sent twice at once: the other request's session
        return AgentSession.objects.get(user=user, idempotency_key=idempotency_key), False
    status, payload = call("POST", "/sessions", {"environment": digest, "limits": limits, "id": session_id,
                                                 "statement": version.statement,
                                                 "verdict": specs.verdict_body(version)}, timeout_s=180.0)  # fmt: skip
    if status != 201:
        session.delete()  # nothing was made: the key may be used again
        _raise_for(status, payload)
    _mirror(session, payload)
    session.save()
    return session, True


def session_get(*, user: Any, session_id: str) -> AgentSession:
    found = AgentSession.objects.select_related("version").filter(pk=session_id).first()
    if found is None or (found.user_id != user.pk and not user.is_staff):
        raise NotFound(f"no session {session_id}")
    return found


def session_step(*, session: AgentSession, seq: Any, action: Any, timeout_s: Any = None) -> tuple[dict, bool]:
    """The observation of step `seq` (replayed: True when it ran before)."""
    if isinstance(seq, int) and not isinstance(seq, bool):
        stored = SessionStep.objects.filter(session=session, seq=seq).first()
        if stored is not None:
            return stored.observation, True
    if session.state in FINAL_SESSION_STATES:
        raise Conflict(f"the session is {session.state}: {session.reason}", code="session_state",
                       details={"state": session.state})  # fmt: skip
    body = {"seq": seq, "action": action, "timeout_s": timeout_s}
    status, payload = call("POST", f"/sessions/{session.id}/steps", body, timeout_s=_step_wait(session, timeout_s))
    if status != 200:
        _raise_for(status, payload, session)
    SessionStep.objects.get_or_create(session=session, seq=payload["seq"], defaults={
        "action": payload["action"], "observation": payload, "obs_hash": payload["obs_hash"]})  # fmt: skip
    AgentSession.objects.filter(pk=session.pk, step_count__lt=payload["seq"]).update(
        step_count=payload["seq"], last_hash=payload["obs_hash"]
    )
    return payload, False


def _step_wait(session: AgentSession, timeout_s: Any) -> float:
    limit = float(session.limits.get("step_timeout_s", 600))
    asked = float(timeout_s) if isinstance(timeout_s, (int, float)) and not isinstance(timeout_s, bool) else limit
    return min(asked, limit, 600.0) + 30.0


def session_fork(*, session: AgentSession, n: Any) -> list[AgentSession]:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 64:
        raise ValidationFailed.naming({"n": ["An integer from 1 to 64."]})
    quota = settings.SESSIONS["MAX_SESSIONS_PER_USER"]
    if _live_count(session.user) + n > quota:
        raise TooBusy(f"{n} more sessions would pass your {quota}; close some first", retry_after=5)
    status, payload = call("POST", f"/sessions/{session.id}/fork", {"n": n}, timeout_s=300.0)
    if status != 201:
        _raise_for(status, payload, session)
    children = []
    for summary in payload["sessions"]:
        child = AgentSession(id=summary["id"], version=session.version, user=session.user, job_id=session.job_id,
                             parent=session, environment=session.environment, limits=session.limits, host=session.host,
                             lease_expires_at=_when(summary["lease_expires_at"]))  # fmt: skip
        _mirror(child, summary)
        children.append(child)
    AgentSession.objects.bulk_create(children)
    return children


def session_submit(*, session: AgentSession) -> AgentSession:
    """The verdict, from a fresh sandbox: once per session (a second submit answers the first)."""
    if session.verdict is not None:
        return session
    wait = float(settings.SESSIONS["VERDICT_TIMEOUT_S"]) * 2 + SUBMIT_MARGIN_S
    status, payload = call("POST", f"/sessions/{session.id}/submit", timeout_s=wait)
    if status != 200:
        _raise_for(status, payload, session)
    _mirror(session, payload)
    session.verdict = payload["verdict"]
    session.reward = payload["verdict"]["reward"]
    session.save()
    return session


def session_renew(*, session: AgentSession) -> AgentSession:
    status, payload = call("POST", f"/sessions/{session.id}/renew")
    if status != 200:
        _raise_for(status, payload, session)
    _mirror(session, payload)
    session.save(update_fields=["state", "reason", "lease_expires_at", "step_count", "last_hash", "updated_at"])
    return session


def session_close(*, session: AgentSession) -> AgentSession:
    if session.state not in FINAL_SESSION_STATES:
        status, payload = call("DELETE", f"/sessions/{session.id}")
        if status == 200:
            _mirror(session, payload)
        elif status != 404:
            _raise_for(status, payload, session)
        else:
            session.state, session.reason = "closed", "the session host no longer held it"
        session.save()
    return session


def sessions_reap(*, now: datetime | None = None) -> dict[str, int]:
    """Rows the host has forgotten or let expire: asked about, and marked as it says."""
    now = now or datetime.now(tz=UTC)
    counts = {"expired": 0, "failed": 0}
    for session in AgentSession.objects.filter(lease_expires_at__lt=now).exclude(state__in=FINAL_SESSION_STATES):
        status, payload = call("GET", f"/sessions/{session.id}")
        if status == 200:
            session.state, session.reason = payload["state"], payload.get("reason", "")
        else:
            session.state, session.reason = "failed", "the session host no longer holds this session"
        if session.state in FINAL_SESSION_STATES:
            counts["expired" if session.state == "expired" else "failed"] += 1
            session.save(update_fields=["state", "reason", "updated_at"])
    return counts


def session_body(session: AgentSession, *, with_steps: bool = False, reveal_hidden: bool = False) -> dict[str, Any]:
    """The API's view of a session. A hidden test's failure message quotes the test, so
    it is left out unless the caller may see hidden tests (scope export:tests)."""
    body = {
        "id": session.id, "state": session.state, "reason": session.reason,
        "version_hash": session.version.content_hash, "parent": session.parent_id,
        "lease_expires_at": session.lease_expires_at.isoformat(), "steps": session.step_count,
        "last_hash": session.last_hash, "reward": session.reward, "first_observation": session.first_observation,
    }  # fmt: skip
    if session.verdict is not None:
        verdict = {key: session.verdict.get(key) for key in ("reward", "status", "reason", "outcomes", "dropped",
                                                             "applied", "diff_sha256")}  # fmt: skip
        if not reveal_hidden:
            verdict["outcomes"] = {test: {"outcome": entry["outcome"]} for test, entry in
                                   (verdict["outcomes"] or {}).items()}  # fmt: skip
        body["verdict"] = verdict
    if with_steps:
        body["transcript"] = [row.observation for row in session.step_rows.order_by("seq")]
    return body

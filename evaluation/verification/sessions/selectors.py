"""Reading sessions for pages: who may see which, and a transcript shaped for a template."""

from __future__ import annotations

from typing import Any

from evaluation.models import AgentSession
from tasks_app.errors import NotFound, PermissionDenied
from tasks_app.roles import CURATOR, REVIEWER, TRAINER, has_role


def _summary(action: dict[str, Any]) -> str:
    kind = action.get("kind", "?")
    detail = action.get("command") or action.get("path") or " ".join(action.get("tests") or [])
    return f"{kind} {detail}".strip()


def session_for_page(*, user: Any, session_id: str) -> tuple[AgentSession, list[dict[str, Any]], list[AgentSession]]:
    """(session, its steps for display, its forks). Its holder sees it; so do curators,
    reviewers and admins, who judge the tasks its reward came from."""
    if not has_role(user, CURATOR, REVIEWER, TRAINER):
        raise PermissionDenied("Sessions are for trainers, curators, reviewers and admins.")
    session = AgentSession.objects.select_related("version__task", "user", "parent").filter(pk=session_id).first()
    if session is None or not (session.user_id == user.pk or has_role(user, CURATOR, REVIEWER)):
        raise NotFound(f"no session {session_id}")
    steps = []
    for row in session.step_rows.order_by("seq"):
        observation = row.observation
        steps.append({"seq": row.seq, "summary": _summary(row.action), "action": row.action,
                      "exit_code": observation.get("exit_code"), "timed_out": observation.get("timed_out"),
                      "elapsed_s": observation.get("elapsed_s"), "stdout": observation.get("stdout", ""),
                      "stderr": observation.get("stderr", ""), "files_changed": observation.get("files_changed", []),
                      "obs_hash": row.obs_hash})  # fmt: skip
    forks = list(session.forks.order_by("created_at"))
    return session, steps, forks

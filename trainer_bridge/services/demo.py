"""The training demo's setup (`make train-demo`): a pool of approved tasks whose
verification has finished, its frozen snapshot, and a token to train on it with.

The replay policy answers with each task's known solutions, which it can only use
once the task's verification has run them. `make run`'s sample catalogue approves a
few tasks without a verification run and queues their verification on the worker,
so on a fresh install those outcomes arrive over the first minutes: hence the wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.utils import timezone

from evaluation.models import Verification, VerificationState
from tasks_app.errors import Conflict
from tasks_app.models import State, Task
from tasks_app.services import api_token_create, task_approve
from tasks_app.services.lifecycle import can_review
from trainer_bridge.criteria import PoolCriteria
from trainer_bridge.models import Pool
from trainer_bridge.services.pools import pool_create, snapshot_create

DEMO_POOL = "demo"
DEMO_CRITERIA: dict[str, Any] = {"require_verified": True}
# The agentic demo: repository tasks only (the catalogue tags them), run as agent sessions.
AGENTIC_POOL = "demo-agentic"
AGENTIC_CRITERIA: dict[str, Any] = {"require_verified": True, "tags_include": ["repository"]}
TOKEN_NAME = "train-demo"  # noqa: S105 - the token's label, not a secret
# export:tests because the replay policy's known solutions reveal the answers.
TOKEN_SCOPES = ["read", "write", "export", "export:tests", "reward", "session"]
TOKEN_DAYS = 7  # a token is made per run; they lapse rather than pile up as live credentials
APPROVE_NOTE = "Approved for the training demo (make train-demo)."
IN_FLIGHT = (VerificationState.QUEUED, VerificationState.RUNNING, VerificationState.INFRASTRUCTURE_ERROR)
# Right after `make run` seeds, a submitted version's verification is still a message the
# worker has not planned (no row yet): give the worker this long before calling it unverified.
PLAN_GRACE_S = 30.0
SAY_EVERY_S = 30.0


@dataclass(frozen=True)
class Checked:
    """Where a version's verification stands: `verified` or `flagged` (its latest finished
    verdict), `running` (none finished, one in flight) or `never`."""

    status: str
    done: int = 0
    total: int = 0


@dataclass(frozen=True)
class DemoSetup:
    token: str
    snapshot: str
    pool: str
    tasks: list[str]
    approved: list[str] = field(default_factory=list)  # approved by this call
    unfinished: list[str] = field(default_factory=list)  # approved, left out: still verifying at the timeout
    snapshot_created: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"token": self.token, "snapshot": self.snapshot, "pool": self.pool, "tasks": self.tasks}


def verification_status(version_ids: list[int]) -> dict[int, Checked]:
    """Each version's Checked. The newest finished verification decides, as a pool's
    candidates are judged (services/pools.py)."""
    checked = {v: Checked("never") for v in version_ids}
    rows = Verification.objects.filter(version_id__in=version_ids).order_by("created_at", "id")
    for version_id, state, verdict, done, total in rows.values_list("version_id", "state", "verdict", "done", "total"):
        if state == VerificationState.DONE:
            checked[version_id] = Checked(verdict or "flagged", done, total)
        elif state in IN_FLIGHT and checked[version_id].status in ("never", "running"):
            checked[version_id] = Checked("running", done, total)
    return checked


def _approved_status() -> dict[str, Checked]:
    """Approved task slug -> how its approved version's verification stands."""
    pairs = dict(
        Task.objects.filter(state=State.APPROVED).exclude(approved_version=None).values_list("slug", "approved_version")
    )
    status = verification_status(list(pairs.values()))
    return {slug: status[version_id] for slug, version_id in sorted(pairs.items())}


def _approve_some(*, reviewer: Any, count: int) -> list[str]:
    """Approve up to `count` verified tasks as `reviewer`, when no approved task could
    ever enter the pool (none verified, none being verified). Tasks whose verification
    passed go first, then those still being verified; flagged ones never."""
    if any(c.status in ("verified", "running") for c in _approved_status().values()):
        return []
    tasks = list(Task.objects.filter(state=State.VERIFIED).exclude(latest_version=None).order_by("slug"))
    status = verification_status([t.latest_version_id for t in tasks])
    rank = {"verified": 0, "running": 1}
    chosen = sorted((t for t in tasks if status[t.latest_version_id].status in rank),
                    key=lambda t: (rank[status[t.latest_version_id].status], t.slug))  # fmt: skip
    approved = []
    for task in chosen:
        if len(approved) >= count:
            break
        if can_review(reviewer, task):  # four eyes: never a task the reviewer wrote
            task_approve(actor=reviewer, task=task, note=APPROVE_NOTE)
            approved.append(task.slug)
    return approved


def _wait(
    *, timeout_s: float, poll_s: float, say: Callable[[str], None], sleep: Callable[[float], None]
) -> dict[str, Checked]:
    """Poll until no approved task's verification is in flight, or `timeout_s` passes."""
    start = time.monotonic()
    shown: tuple[Any, ...] = ()
    shown_at = start
    while True:
        status = _approved_status()
        now = time.monotonic()
        elapsed = now - start
        waiting = {s: c for s, c in status.items() if c.status == "running" or
                   (c.status == "never" and elapsed < PLAN_GRACE_S)}  # fmt: skip
        if not waiting or elapsed >= timeout_s:
            return status
        done, total = sum(c.done for c in waiting.values()), sum(c.total for c in waiting.values())
        # A line when something moved, else one every SAY_EVERY_S: a queue ahead of these
        # verifications can hold them still for minutes.
        if (tuple(waiting), done) != shown or now - shown_at >= SAY_EVERY_S:
            say(f"waiting for the worker to verify {', '.join(waiting)}: {done}/{total} executions, {elapsed:.0f} s")
            shown, shown_at = (tuple(waiting), done), now
        sleep(poll_s)


def _demo_pool(*, slug: str, actor: Any, criteria: dict[str, Any]) -> Pool:
    pool = Pool.objects.filter(slug=slug).first()
    if pool is None:
        return pool_create(slug=slug, title="Training demo", criteria=criteria, actor=actor)
    if PoolCriteria.parse(pool.criteria) != PoolCriteria.parse(criteria):
        raise Conflict(f"A pool {slug!r} exists with other criteria than the demo's {criteria}; "
                       "name another pool for the demo.", details={"pool": [slug]})  # fmt: skip
    return pool


def train_demo_setup(
    *,
    curator: Any,
    reviewer: Any,
    trainer: Any,
    pool_slug: str = DEMO_POOL,
    criteria: dict[str, Any] | None = None,
    approve: int = 4,
    timeout_s: float = 900.0,
    poll_s: float = 5.0,
    say: Callable[[str], None] = lambda line: None,
    sleep: Callable[[float], None] = time.sleep,
) -> DemoSetup:
    """Make everything a training run of the demo needs. Idempotent, but for the token.

    Steps, in order (no transaction around them: the wait must not hold the database):
    1. when no approved task is verified or being verified, approve up to `approve`
       verified tasks as `reviewer`;
    2. wait up to `timeout_s` for the worker to finish verifying the approved tasks;
    3. the pool `pool_slug` (approved tasks whose latest verification passed, narrowed by
       `criteria`: DEMO_CRITERIA, or AGENTIC_CRITERIA for repository tasks), created by
       `curator` if missing;
    4. its snapshot, frozen (the same selection is the same snapshot);
    5. a new token of `trainer` that may register jobs and read known solutions.
    """
    approved = _approve_some(reviewer=reviewer, count=approve)
    if approved:
        say(f"no approved task could enter the pool: approved {', '.join(approved)} as {reviewer.username}")
    status = _wait(timeout_s=timeout_s, poll_s=poll_s, say=say, sleep=sleep)
    verified = [slug for slug, c in status.items() if c.status == "verified"]
    if not verified:
        by_status = {s: [slug for slug, c in status.items() if c.status == s] for s in ("running", "flagged", "never")}
        found = "; ".join(f"{s}: {', '.join(slugs)}" for s, slugs in by_status.items() if slugs) or "none approved"
        raise Conflict(
            f"No approved task has a finished, passing verification (after waiting up to {timeout_s:.0f} s; "
            f"{found}). Is the worker of `make run` running? A task never verified can be with "
            "`manage.py verify --task SLUG --wait`.",
            details={"approved": {slug: c.status for slug, c in status.items()}},
        )
    unfinished = [slug for slug, c in status.items() if c.status == "running"]
    if unfinished:
        say(f"left out, still being verified after {timeout_s:.0f} s: {', '.join(unfinished)}")
    pool = _demo_pool(slug=pool_slug, actor=curator, criteria=criteria or DEMO_CRITERIA)
    snapshot, created = snapshot_create(pool=pool, actor=curator)
    members = list(snapshot.members.order_by("position").values_list("task__slug", flat=True))
    issued = api_token_create(user=trainer, name=TOKEN_NAME, scopes=TOKEN_SCOPES,
                              expires_at=timezone.now() + timedelta(days=TOKEN_DAYS))  # fmt: skip
    return DemoSetup(token=issued.secret, snapshot=snapshot.hash, pool=snapshot.pool.slug, tasks=members,
                     approved=approved, unfinished=unfinished, snapshot_created=created)  # fmt: skip

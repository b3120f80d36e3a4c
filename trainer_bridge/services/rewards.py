"""The reward API's services: take a batch of completions, run them on the sandbox
workers, and say what each earned.

A batch is checked whole before anything is stored (an error names the
completion and field at fault). Stored, its completions are split into chunks,
each a message on the `sandbox` queue that verification also uses; a worker
runs a chunk's completions side by side on its warm sandbox pool. The caller
waits for the verdicts up to its deadline.

What a verdict earns, and the worker's side, are in reward_runs.py.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Min
from django.utils import timezone

from evaluation.difficulty.samples import with_prompt
from evaluation.sandbox.types import FINAL
from tasks_app.errors import Conflict, NotFound, PermissionDenied, TooBusy, ValidationFailed
from tasks_app.models import TaskVersion
from tasks_app.roles import CURATOR, REVIEWER, has_role
from trainer_bridge.extraction import extract_code
from trainer_bridge.models import REWARD_MODES, RewardBatch, RewardItem, SnapshotMember, TrainingJob
from trainer_bridge.services import reward_rows, wakeups

FAILURES_SHOWN = 20
_HASH_CHARS = set("0123456789abcdef")


def options() -> dict[str, Any]:
    defaults = {"MAX_BATCH": 256, "MAX_COMPLETION_BYTES": 65536, "DEADLINE_S": 120.0, "MAX_DEADLINE_S": 600.0,
                "MAX_IN_FLIGHT": 2048, "CHUNK": 16, "RETENTION_H": 72, "SANDBOX_RETRIES": 2}  # fmt: skip
    return {**defaults, **getattr(settings, "REWARD", {})}


# -- the request ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Completion:
    version_hash: str
    completion: str
    client_id: str


@dataclass(frozen=True)
class BatchRequest:
    completions: list[Completion]
    reward_mode: str
    seed: int
    deadline_s: float
    idempotency_key: str

    def digest(self) -> str:
        body = {"mode": self.reward_mode, "seed": self.seed,
                "completions": [[c.version_hash, c.completion, c.client_id] for c in self.completions]}  # fmt: skip
        return hashlib.sha256(json.dumps(body, separators=(",", ":")).encode()).hexdigest()


def parse_batch(body: Any, *, idempotency_key: str = "", job: TrainingJob | None = None) -> BatchRequest:
    """Check a request body whole; a ValidationFailed names every field at fault."""
    limits = options()
    errors: dict[str, list[str]] = {}
    if not isinstance(body, dict):
        raise ValidationFailed("The body must be a JSON object with a `completions` list.",
                               details={"body": [f"Got {type(body).__name__}."]})  # fmt: skip
    unknown = sorted(set(body) - {"completions", "reward", "seed", "deadline_s", "idempotency_key"})
    if unknown:
        errors["body"] = [f"Unknown fields: {', '.join(unknown)}."]
    raw = body.get("completions")
    completions: list[Completion] = []
    if not isinstance(raw, list) or not raw:
        errors["completions"] = ["A non-empty list of {version_hash, completion} objects."]
    elif len(raw) > limits["MAX_BATCH"]:
        errors["completions"] = [f"At most {limits['MAX_BATCH']} completions a batch; got {len(raw)}."]
    else:
        for n, item in enumerate(raw):
            where = f"completions[{n}]"
            if not isinstance(item, dict):
                errors[where] = ["An object with version_hash and completion."]
                continue
            digest, text, client_id = item.get("version_hash"), item.get("completion"), item.get("id", "")
            if not isinstance(digest, str) or len(digest) != 64 or not set(digest) <= _HASH_CHARS:
                errors[f"{where}.version_hash"] = ["A task version's content hash: 64 lowercase hex characters."]
            if not isinstance(text, str):
                errors[f"{where}.completion"] = ["The completion's text (a string)."]
            elif len(text.encode("utf-8", "surrogatepass")) > limits["MAX_COMPLETION_BYTES"]:
                errors[f"{where}.completion"] = [f"At most {limits['MAX_COMPLETION_BYTES']} bytes."]
            elif "\x00" in text:
                errors[f"{where}.completion"] = ["Contains a NUL character."]
            if client_id is None:
                client_id = ""
            if not isinstance(client_id, (str, int)) or len(str(client_id)) > 200:
                errors[f"{where}.id"] = ["Your own label for it: a string or integer, at most 200 characters."]
            if not any(k.startswith(where) for k in errors):
                completions.append(Completion(digest, text, str(client_id)))
    mode = body.get("reward", job.reward_mode if job else "binary")
    if mode not in REWARD_MODES:
        errors["reward"] = [f"One of: {', '.join(REWARD_MODES)}."]
    seed = body.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**31:
        errors["seed"] = ["A whole number from 0 to 2^31-1."]
    deadline = body.get("deadline_s", limits["DEADLINE_S"])
    if (not isinstance(deadline, (int, float)) or isinstance(deadline, bool) or not math.isfinite(deadline)
            or not 0 < deadline <= limits["MAX_DEADLINE_S"]):  # fmt: skip
        errors["deadline_s"] = [f"Seconds to wait for the verdicts: more than 0, at most {limits['MAX_DEADLINE_S']}."]
    key = idempotency_key or body.get("idempotency_key") or ""
    if not isinstance(key, str) or len(key) > 200 or not all(ch.isprintable() for ch in key):
        errors["idempotency_key"] = ["At most 200 printable characters."]
    if errors:
        raise ValidationFailed.naming(errors)
    return BatchRequest(completions, mode, seed, float(deadline), key)


# -- submitting ------------------------------------------------------------------------------


def _versions(request: BatchRequest, job: TrainingJob | None, user: Any) -> dict[str, TaskVersion]:
    """Hash -> a version with that content (any: the same content runs the same).
    A job's token may name its snapshot's versions only; a trainer (neither curator
    nor reviewer) those of the snapshots of jobs they registered."""
    wanted = sorted({c.version_hash for c in request.completions})
    found = {v.content_hash: v for v in reward_rows.versions_with_hashes(wanted, _PREPARE_FIELDS)}
    errors = {f"completions[{n}].version_hash": ["No task version has this content hash."]
              for n, c in enumerate(request.completions) if c.version_hash not in found}  # fmt: skip
    if errors:
        raise ValidationFailed.naming(errors)
    if job is not None or not has_role(user, CURATOR, REVIEWER):
        if job:
            allowed = reward_rows.snapshot_hashes_held(job.snapshot_id, wanted)
        else:
            allowed = _in_own_jobs_snapshots(user, wanted)
        where = f"this job's snapshot {job.snapshot.hash[:12]}" if job else "a snapshot of a job you registered"
        outside = {f"completions[{n}].version_hash": [f"Not in {where}."]
                   for n, c in enumerate(request.completions) if c.version_hash not in allowed}  # fmt: skip
        if outside:
            raise PermissionDenied(f"Rewards are asked for on versions in {where} only.", details=outside)
    return found


def _in_own_jobs_snapshots(user: Any, hashes: list[str]) -> set[str]:
    """Which of `hashes` a snapshot of one of the user's jobs holds."""
    members = SnapshotMember.objects.filter(content_hash__in=hashes, snapshot__jobs__created_by=user)
    return set(members.values_list("content_hash", flat=True))


# What preparing the code needs; workers load the rest.
_PREPARE_FIELDS = ("id", "content_hash", "entry_point", "starter_code", "language")


def prepared_code(completion: str, version: TaskVersion) -> str:
    """What runs: the completion's code, behind the task's prompt when it is only a body."""
    code = extract_code(completion, version.language or "python")
    return with_prompt(
        code, prompt=version.starter_code, entry_point=version.entry_point, language=version.language or "python"
    )


def in_flight() -> int:
    """Completions waiting for a sandbox or running (an index on status answers it)."""
    return reward_rows.reward_items_in_flight()


def _retry_after(waiting: int) -> int:
    """Seconds until the queue has likely drained enough: waiting / recent throughput.

    The throughput is over the part of the last minute that saw work: from the first
    verdict in it to now. Over the whole minute, a quiet spell before a burst (a trainer
    generating between steps) read as a rate several times too low, and clients were
    told to wait ~40 s for a queue that drained in ~3 s."""
    now = timezone.now()
    recent = RewardItem.objects.filter(finished_at__gte=now - timedelta(seconds=60)).aggregate(
        finished=Count("pk"), first=Min("finished_at")
    )
    if not recent["finished"]:
        return 5
    span_s = max(1.0, (now - recent["first"]).total_seconds())
    return max(1, min(60, math.ceil(waiting / (recent["finished"] / span_s))))


def rewards_submit(*, user: Any, request: BatchRequest, job: TrainingJob | None = None) -> tuple[RewardBatch, bool]:
    """Store a batch, or find the one stored under the same idempotency key.
    Returns (batch, created); only a created batch needs enqueueing."""
    digest = request.digest()
    if request.idempotency_key:
        existing = reward_rows.reward_batch_by_key(user.pk, request.idempotency_key)
        if existing is not None:
            return _same_batch(existing, digest), False
    versions = _versions(request, job, user)
    rows = []
    for n, c in enumerate(request.completions):
        version = versions[c.version_hash]
        code = prepared_code(c.completion, version)
        digest_of_code = hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()
        rows.append((n, c.client_id, version.pk, code, digest_of_code))
    now = timezone.now()
    batch = RewardBatch(id=uuid.uuid4(), user=user, job=job, idempotency_key=request.idempotency_key,
                        body_digest=digest, reward_mode=request.reward_mode, seed=request.seed,
                        size=len(request.completions), created_at=now)  # fmt: skip
    try:
        with transaction.atomic():
            _admit(len(rows))
            reward_rows.reward_batch_insert(batch)
            # Kept for chunks_of: the enqueue that follows needs no query.
            batch.created_item_ids = reward_rows.reward_items_insert(batch, rows, now)
    except IntegrityError:
        # Two retries of one batch raced; the other stored it.
        existing = RewardBatch.objects.get(user=user, idempotency_key=request.idempotency_key)
        return _same_batch(existing, digest), False
    return batch, True


def _admit(size: int) -> None:
    """Refuse (TooBusy, with Retry-After) a batch of `size` that would take the
    completions in flight past REWARD MAX_IN_FLIGHT. Called in the transaction that
    inserts the batch, under the admission lock (reward_rows.reward_admission_lock):
    two batches counted side by side would both fit and together pass the limit."""
    reward_rows.reward_admission_lock()
    waiting, limit = in_flight(), options()["MAX_IN_FLIGHT"]
    if waiting + size > limit:
        raise TooBusy(
            f"{waiting} completions are waiting for a sandbox; this batch of {size} would pass the limit of "
            f"{limit}. Retry after the time in Retry-After.",
            retry_after=_retry_after(waiting),
        )


def _same_batch(existing: RewardBatch, digest: str) -> RewardBatch:
    if existing.body_digest != digest:
        raise Conflict(
            "This idempotency key was used for a different batch; use a new key for new completions.",
            details={"idempotency_key": [f"Names batch {existing.id}."]},
        )
    return existing


def chunks_of(batch: RewardBatch, *, only_unfinished: bool = False) -> list[list[int]]:
    """The batch's item ids, in chunks of REWARD CHUNK: one queue message each."""
    ids = None if only_unfinished else getattr(batch, "created_item_ids", None)
    if ids is None:
        items = batch.items.order_by("index")
        if only_unfinished:
            items = items.filter(finished_at__isnull=True)
        ids = list(items.values_list("pk", flat=True))
    size = max(1, int(options()["CHUNK"]))
    return [ids[i : i + size] for i in range(0, len(ids), size)]


# -- waiting and answering ---------------------------------------------------------------------


def rewards_wait(batch: RewardBatch, *, deadline_s: float) -> list[dict[str, Any]] | None:
    """Wait until every item has its verdict or the deadline passes. Returns the
    batch's rows for its answer once all are in (the last look fetches them), None
    at the deadline. Between looks the request blocks until a worker says it wrote
    verdicts (wakeups.py), or, without Redis, sleeps 5 ms growing to 100 ms."""
    until = time.monotonic() + deadline_s
    pause = 0.005
    if getattr(batch, "created_item_ids", None) is not None:  # just queued: wait before the first look
        wakeups.wait(batch.pk, seconds=deadline_s, fallback_s=pause)
    while True:
        rows = reward_rows.reward_body_rows(batch)
        if all(row["finished_at"] is not None for row in rows):
            return rows
        left = until - time.monotonic()
        if left <= 0:
            return None
        wakeups.wait(batch.pk, seconds=left, fallback_s=pause)
        pause = min(pause * 1.5, 0.1)


def batch_body(
    batch: RewardBatch, *, reveal_hidden: bool, replayed: bool = False, rows: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The batch as the API answers it (from `rows` when the caller has them). Hidden
    tests' messages stay hidden unless the caller may read hidden tests
    (`export:tests`): a policy must not learn them."""
    items = rows if rows is not None else reward_rows.reward_body_rows(batch)
    results = [_item_body(row, reveal_hidden) for row in items]
    counts: dict[str, int] = {}
    for row in results:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    done = all(row["status"] in FINAL for row in results)
    return {"id": str(batch.id), "state": "done" if done else "running", "reward_mode": batch.reward_mode,
            "idempotency_key": batch.idempotency_key or None, "replayed": replayed, "size": batch.size,
            "counts": dict(sorted(counts.items())), "results": results}  # fmt: skip


def _item_body(row: dict[str, Any], reveal_hidden: bool) -> dict[str, Any]:
    detail = row["result"] or {}
    failures = []
    for test in detail.get("tests", []):
        if test["outcome"] == "passed" or len(failures) >= FAILURES_SHOWN:
            continue
        hidden = test["name"].startswith("hidden")
        failures.append({"name": test["name"], "outcome": test["outcome"],
                         "message": test["message"] if reveal_hidden or not hidden else "(hidden test)"})  # fmt: skip
    queue_s = (row["started_at"] - row["queued_at"]).total_seconds() if row["started_at"] else None
    total_s = (row["finished_at"] - row["queued_at"]).total_seconds() if row["finished_at"] else None
    return {
        "index": row["index"],
        "id": row["client_id"] or None,
        "version_hash": row["version__content_hash"],
        "status": row["status"],
        "reward": row["reward"],
        "tests": {"passed": row["tests_passed"], "total": row["tests_total"], "failures": failures},
        "message": detail.get("message", ""),
        "stderr": detail.get("stderr", ""),
        "timings": {
            "queue_s": _round(queue_s),
            "wall_s": _round(row["wall_s"]),
            "cpu_s": _round(row["cpu_s"]),
            "total_s": _round(total_s),
        },
        "request_digest": detail.get("request_digest") or None,
        # Runs the server added because one ended in sandbox_error (REWARD_SANDBOX_RETRIES at most).
        "retries": int(detail.get("retries") or 0),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def batch_get(*, batch_id: Any, user: Any) -> RewardBatch:
    try:
        batch = RewardBatch.objects.filter(pk=uuid.UUID(str(batch_id)), user=user).first()
    except ValueError:
        batch = None
    if batch is None:
        raise NotFound(f"No reward batch {batch_id!s:.40} of yours.")
    return batch


def stale_unfinished(batch: RewardBatch, *, older_than_s: float = 30.0) -> bool:
    """Whether a replayed batch has items still pending long after they were queued
    (their message may be lost with a broker restart): then they are enqueued again,
    which is harmless, since a chunk runs only what it can claim."""
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    return batch.items.filter(status="pending", queued_at__lt=cutoff).exists()


def rewards_prune() -> int:
    """Delete finished batches older than the retention window (REWARD RETENTION_H)."""
    cutoff = timezone.now() - timedelta(hours=float(options()["RETENTION_H"]))
    deleted, _ = RewardBatch.objects.filter(created_at__lt=cutoff, finished_at__isnull=False).delete()
    return deleted

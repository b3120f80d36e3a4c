"""Pools: what their criteria select, a preview before freezing, snapshots, diffs.

A candidate is an approved task's approved version, with what the platform knows
of it: its flags (its latest verification's and the task's own), its reward
noise (that verification's estimate), its difficulty and band (the latest fit:
measured, else predicted; "unknown" without either) and its tags.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from evaluation.difficulty.selectors import difficulty_table
from evaluation.models import Flag, TaskFlag, Verification
from tasks_app.errors import NotFound, ValidationFailed
from tasks_app.models import State, Task
from trainer_bridge.criteria import PoolCriteria
from trainer_bridge.models import Pool, Snapshot, SnapshotMember


@dataclass(frozen=True)
class Candidate:
    task: Task
    version: Any
    tags: tuple[str, ...]
    flags: frozenset[str]
    verified: bool
    reward_noise: float | None
    difficulty: float | None
    difficulty_source: str
    band: str


def candidates() -> list[Candidate]:
    """Every approved task's approved version, with its flags, noise, difficulty and tags."""
    tasks = list(
        Task.objects.filter(state=State.APPROVED)
        .exclude(approved_version=None)
        .select_related("approved_version")
        .prefetch_related("tags")
        .order_by("slug")
    )
    version_ids = [t.approved_version_id for t in tasks]
    latest: dict[int, Verification] = {}
    for verification in Verification.objects.filter(version_id__in=version_ids, state="done").order_by("created_at"):
        latest[verification.version_id] = verification  # the newest wins
    flags: dict[int, set[str]] = {}
    for version_id, code in Flag.objects.filter(verification__in=list(latest.values())).values_list(
        "verification__version_id", "code"
    ):
        flags.setdefault(version_id, set()).add(code)
    task_flags: dict[int, set[str]] = {}
    for task_id, code in TaskFlag.objects.filter(task__in=tasks).values_list("task_id", "code"):
        task_flags.setdefault(task_id, set()).add(code)
    table = difficulty_table()
    by_slug = {row["task"]: row for row in (table["tasks"] if table else [])}
    out = []
    for task in tasks:
        verification = latest.get(task.approved_version_id)
        summary = (verification.summary or {}) if verification else {}
        row = by_slug.get(task.slug)
        out.append(Candidate(
            task=task, version=task.approved_version, tags=tuple(sorted(t.name for t in task.tags.all())),
            flags=frozenset(flags.get(task.approved_version_id, set()) | task_flags.get(task.pk, set())),
            verified=bool(verification and verification.verdict == "verified"),
            reward_noise=(summary.get("reward_noise") or {}).get("value"),
            difficulty=row["difficulty"] if row else None, difficulty_source=row["source"] if row else "",
            band=row["band"] if row else "unknown",
        ))  # fmt: skip
    return out


def matches(candidate: Candidate, criteria: PoolCriteria) -> bool:
    if criteria.require_verified and not candidate.verified:
        return False
    if criteria.max_reward_noise is not None and (
        candidate.reward_noise is None or candidate.reward_noise > criteria.max_reward_noise
    ):
        return False
    if criteria.bands and candidate.band not in criteria.bands:
        return False
    for bound, inside in ((criteria.difficulty_min, lambda d: d >= criteria.difficulty_min),
                          (criteria.difficulty_max, lambda d: d <= criteria.difficulty_max)):  # fmt: skip
        if bound is not None and (candidate.difficulty is None or not inside(candidate.difficulty)):
            return False
    if criteria.languages and candidate.version.language not in criteria.languages:
        return False
    if criteria.tags_include and not set(candidate.tags) & set(criteria.tags_include):
        return False
    if set(candidate.tags) & set(criteria.tags_exclude):
        return False
    return not candidate.flags & set(criteria.exclude_flags)


def _stratum(candidate: Candidate) -> tuple[str, str]:
    return candidate.band, candidate.tags[0] if candidate.tags else ""


def sample(selected: list[Candidate], criteria: PoolCriteria) -> list[Candidate]:
    """At most max_size of `selected`, drawn with the criteria's seed.

    Stratified: each (band, first tag) stratum gets its share of the size in
    proportion to how many it holds (largest remainders get the rounding), and its
    members are drawn at random within it. The result is in slug order, so the same
    selection always freezes to the same list."""
    size = criteria.max_size
    if size is None or len(selected) <= size:
        return sorted(selected, key=lambda c: c.task.slug)
    rng = random.Random(criteria.seed)  # noqa: S311 - reproducible sampling, not secrets
    if not criteria.stratify:
        return sorted(rng.sample(sorted(selected, key=lambda c: c.task.slug), size), key=lambda c: c.task.slug)
    strata: dict[tuple[str, str], list[Candidate]] = {}
    for candidate in sorted(selected, key=lambda c: c.task.slug):
        strata.setdefault(_stratum(candidate), []).append(candidate)
    keys = sorted(strata)
    exact = {k: size * len(strata[k]) / len(selected) for k in keys}
    shares = {k: int(exact[k]) for k in keys}
    for k in sorted(keys, key=lambda k: (-(exact[k] - shares[k]), k))[: size - sum(shares.values())]:
        shares[k] += 1
    chosen = [c for k in keys for c in rng.sample(strata[k], shares[k])]
    return sorted(chosen, key=lambda c: c.task.slug)


def pool_preview(*, criteria: PoolCriteria) -> dict[str, Any]:
    """How many tasks the criteria match and would freeze, and from which bands and tags."""
    pool = candidates()
    selected = [c for c in pool if matches(c, criteria)]
    frozen = sample(selected, criteria)

    def spread(items: list[Candidate]) -> dict[str, Any]:
        return {"count": len(items), "by_band": dict(sorted(Counter(c.band for c in items).items())),
                "by_tag": dict(sorted(Counter(t for c in items for t in c.tags).items())),
                "by_language": dict(sorted(Counter(c.version.language for c in items).items()))}  # fmt: skip

    return {"approved": len(pool), "matched": spread(selected), "selected": spread(frozen),
            "tasks": [c.task.slug for c in frozen]}  # fmt: skip


def pool_create(*, slug: str, title: str, criteria: dict[str, Any], actor: Any = None) -> Pool:
    if not isinstance(slug, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,119}", slug):
        raise ValidationFailed("A pool's slug is lowercase letters, digits and hyphens (at most 120).",
                               details={"slug": [f"Got {slug!r}."]})  # fmt: skip
    parsed = PoolCriteria.parse(criteria)
    taken = ValidationFailed(f"A pool named {slug!r} exists already.", details={"slug": ["Taken."]})
    if Pool.objects.filter(slug=slug).exists():
        raise taken
    try:
        with transaction.atomic():  # a savepoint: losing a race must not spoil the caller's transaction
            return Pool.objects.create(slug=slug, title=title or slug, criteria=parsed.as_dict(), created_by=actor)
    except IntegrityError:
        raise taken from None


def snapshot_hash(criteria: dict[str, Any], content_hashes: list[str]) -> str:
    body = json.dumps({"criteria": criteria, "members": content_hashes}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()


def snapshot_create(*, pool: Pool, actor: Any = None) -> tuple[Snapshot, bool]:
    """Freeze what the pool selects now. Returns (snapshot, created): the same
    selection under the same criteria is the existing snapshot of that hash."""
    criteria = PoolCriteria.parse(pool.criteria)
    frozen = sample([c for c in candidates() if matches(c, criteria)], criteria)
    if not frozen:
        raise ValidationFailed(f"Pool {pool.slug!r} selects no task: nothing to freeze.",
                               details={"criteria": ["No approved task matches."]})  # fmt: skip
    digest = snapshot_hash(criteria.as_dict(), [c.version.content_hash for c in frozen])
    existing = Snapshot.objects.filter(hash=digest).first()
    if existing is not None:
        return existing, False
    with transaction.atomic():
        snapshot = Snapshot.objects.create(pool=pool, hash=digest, criteria=criteria.as_dict(), size=len(frozen),
                                           created_by=actor)  # fmt: skip
        SnapshotMember.objects.bulk_create(
            SnapshotMember(snapshot=snapshot, position=n, task=c.task, version=c.version,
                           content_hash=c.version.content_hash, band=c.band, difficulty=c.difficulty,
                           difficulty_source=c.difficulty_source, reward_noise=c.reward_noise, tags=list(c.tags))
            for n, c in enumerate(frozen)
        )  # fmt: skip
    return snapshot, True


def snapshot_get(*, pool_slug: str, digest: str) -> Snapshot:
    snapshot = Snapshot.objects.filter(pool__slug=pool_slug, hash=digest).select_related("pool").first()
    if snapshot is None:
        raise NotFound(f"No snapshot {digest[:12]!r} of pool {pool_slug!r}.")
    return snapshot


def snapshot_diff(*, old: Snapshot, new: Snapshot) -> dict[str, list[Any]]:
    """Tasks added, removed, and changed (another version) from `old` to `new`."""
    before = dict(old.members.values_list("task__slug", "content_hash"))
    after = dict(new.members.values_list("task__slug", "content_hash"))
    return {
        "added": sorted(set(after) - set(before)),
        "removed": sorted(set(before) - set(after)),
        "changed": [
            {"task": t, "from": before[t], "to": after[t]}
            for t in sorted(set(before) & set(after))
            if before[t] != after[t]
        ],
    }

"""What the pool pages read, each in a fixed number of queries whatever the number
of pools, snapshots or builds."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, OuterRef, Subquery

from tasks_app.roles import CURATOR, REVIEWER, has_role
from trainer_bridge.models import ExportBuild, Pool, Snapshot, TrainingJob


def pool_rows() -> list[Pool]:
    """Every pool with its snapshot count and its latest snapshot's hash and size."""
    latest = Snapshot.objects.filter(pool=OuterRef("pk")).order_by("-created_at", "-pk")
    return list(
        Pool.objects.annotate(
            snapshot_count=Count("snapshots"),
            latest_hash=Subquery(latest.values("hash")[:1]),
            latest_size=Subquery(latest.values("size")[:1]),
        ).order_by("slug")
    )


def pool_snapshots(pool: Pool) -> list[Snapshot]:
    return list(pool.snapshots.select_related("created_by").order_by("-created_at", "-pk"))


def latest_builds(snapshots: list[Snapshot]) -> dict[tuple[int, str], ExportBuild]:
    """The newest build of each (snapshot, format)."""
    out: dict[tuple[int, str], ExportBuild] = {}
    for build in ExportBuild.objects.filter(snapshot__in=snapshots).order_by("-created_at"):
        out.setdefault((build.snapshot_id, build.format), build)
    return out


def readable_snapshot_ids(user: Any, snapshots: list[Snapshot]) -> set[int]:
    """The snapshots `user` may export: all for curators, reviewers and admins; for a
    trainer, those of the training jobs they registered (as services.jobs.can_read_snapshot,
    in one query for the whole list)."""
    ids = {s.pk for s in snapshots}
    if has_role(user, CURATOR, REVIEWER):
        return ids
    return set(TrainingJob.objects.filter(created_by=user, snapshot_id__in=ids).values_list("snapshot_id", flat=True))

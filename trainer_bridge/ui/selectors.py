"""What the pool pages read, each in a fixed number of queries whatever the number
of pools, snapshots or builds."""

from __future__ import annotations

from django.db.models import Count, OuterRef, Subquery

from trainer_bridge.models import ExportBuild, Pool, Snapshot


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

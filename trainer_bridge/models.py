"""Pools (named selections of tasks) and their snapshots (frozen, hashed member lists)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from tasks_app.models import ImmutableQuerySet, ImmutableVersionError, Task, TaskVersion


class Pool(models.Model):
    """A named selection: its criteria (trainer_bridge.criteria) decide which tasks are
    in it; a snapshot freezes what they select at one moment."""

    slug = models.SlugField(max_length=120, unique=True)
    title = models.CharField(max_length=200)
    criteria = models.JSONField(default=dict)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Snapshot(models.Model):
    """An immutable, ordered list of task versions, named by its hash: SHA-256 over the
    criteria and the members' version content hashes, in order. The same pool with
    the same catalogue freezes to the same hash (and the same row)."""

    pool = models.ForeignKey(Pool, on_delete=models.PROTECT, related_name="snapshots")
    hash = models.CharField(max_length=64, unique=True)
    criteria = models.JSONField()
    size = models.PositiveIntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ImmutableQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.pool.slug}@{self.hash[:12]}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableVersionError(f"Snapshot {self.hash[:12]} is frozen; freeze the pool again instead.")
        super().save(*args, **kwargs)


class SnapshotMember(models.Model):
    """One task version in a snapshot, with what was known of it when it was frozen."""

    snapshot = models.ForeignKey(Snapshot, on_delete=models.CASCADE, related_name="members")
    position = models.PositiveIntegerField()
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="+")
    version = models.ForeignKey(TaskVersion, on_delete=models.PROTECT, related_name="+")
    content_hash = models.CharField(max_length=64)
    band = models.CharField(max_length=16, blank=True)
    difficulty = models.FloatField(null=True, blank=True)
    difficulty_source = models.CharField(max_length=24, blank=True)
    reward_noise = models.FloatField(null=True, blank=True)
    tags = models.JSONField(default=list)

    objects = ImmutableQuerySet.as_manager()

    class Meta:
        ordering = ["snapshot_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "position"], name="member_unique_position"),
            models.UniqueConstraint(fields=["snapshot", "task"], name="member_unique_task"),
        ]

    def __str__(self) -> str:
        return f"{self.snapshot_id}#{self.position}: {self.content_hash[:12]}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableVersionError("Snapshot members are frozen with their snapshot.")
        super().save(*args, **kwargs)

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


REWARD_MODES = ("binary", "fraction")


class TrainingJob(models.Model):
    """A training run registered against one snapshot. Its token (made with it, shown
    once) reads that snapshot only, asks for rewards on its versions only, and posts
    the job's rollouts and metrics."""

    STATES = ("registered", "running", "finished", "failed")

    name = models.CharField(max_length=120)
    snapshot = models.ForeignKey(Snapshot, on_delete=models.PROTECT, related_name="jobs")
    reward_mode = models.CharField(max_length=16, choices=[(m, m) for m in REWARD_MODES], default="binary")
    solver = models.CharField(max_length=120)  # the name its rollouts are recorded under (difficulty model)
    token = models.OneToOneField(
        "tasks_app.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="training_job"
    )
    state = models.CharField(max_length=16, choices=[(s, s) for s in STATES], default="registered")
    config = models.JSONField(default=dict, blank=True)
    steps_total = models.PositiveIntegerField(null=True, blank=True)
    steps_done = models.PositiveIntegerField(default=0)
    rollouts = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"job {self.pk} {self.name}"


class JobMetric(models.Model):
    """One step's metrics as the trainer posted them (reward mean, loss, KL, ...)."""

    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="metrics")
    step = models.PositiveIntegerField()
    values = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job_id", "step"]
        constraints = [models.UniqueConstraint(fields=["job", "step"], name="jobmetric_unique_step")]

    def __str__(self) -> str:
        return f"job {self.job_id} step {self.step}"


class RewardBatch(models.Model):
    """One POST /api/v1/rewards. Keyed per user by its idempotency key: the same key
    with the same body is the same batch (a retry runs nothing again)."""

    id = models.UUIDField(primary_key=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    job = models.ForeignKey(TrainingJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="batches")
    idempotency_key = models.CharField(max_length=200, blank=True)
    body_digest = models.CharField(max_length=64)
    reward_mode = models.CharField(max_length=16, choices=[(m, m) for m in REWARD_MODES])
    seed = models.PositiveIntegerField(default=0)  # the runs' seed: PYTHONHASHSEED and test order
    size = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="rewardbatch_unique_key",
            )
        ]

    def __str__(self) -> str:
        return f"reward batch {self.id} ({self.size})"


class RewardItem(models.Model):
    """One completion of a batch and, once run, its verdict. `reward` stays null for
    `sandbox_error`: a broken sandbox is not a wrong answer."""

    batch = models.ForeignKey(RewardBatch, on_delete=models.CASCADE, related_name="items")
    index = models.PositiveIntegerField()
    client_id = models.CharField(max_length=200, blank=True)
    version = models.ForeignKey(TaskVersion, on_delete=models.PROTECT, related_name="+")
    code = models.TextField()
    code_digest = models.CharField(max_length=64)
    status = models.CharField(max_length=24, default="pending", db_index=True)
    reward = models.FloatField(null=True, blank=True)
    tests_passed = models.PositiveIntegerField(default=0)
    tests_total = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)  # per-test outcomes, message, stderr tail, replay digest
    wall_s = models.FloatField(null=True, blank=True)
    cpu_s = models.FloatField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    tries = models.PositiveIntegerField(default=0)
    queued_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["batch_id", "index"]
        constraints = [models.UniqueConstraint(fields=["batch", "index"], name="rewarditem_unique_index")]
        indexes = [models.Index(fields=["batch", "finished_at"])]

    def __str__(self) -> str:
        return f"{self.batch_id}#{self.index}: {self.status}"


class ExportBuild(models.Model):
    """A snapshot export written to a file in the background, for large snapshots:
    progress as rows written, then a download link. The same snapshot, format and
    options reuse a finished build."""

    STATES = ("queued", "running", "done", "failed")

    id = models.UUIDField(primary_key=True)
    snapshot = models.ForeignKey(Snapshot, on_delete=models.CASCADE, related_name="builds")
    format = models.CharField(max_length=16)
    gzip = models.BooleanField(default=False)
    with_hidden_tests = models.BooleanField(default=False)
    state = models.CharField(max_length=16, choices=[(s, s) for s in STATES], default="queued")
    rows_done = models.PositiveIntegerField(default=0)
    rows_total = models.PositiveIntegerField(default=0)
    path = models.CharField(max_length=500, blank=True)
    size_bytes = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"export {self.id} of {self.snapshot_id} ({self.format}, {self.state})"

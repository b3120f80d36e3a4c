"""Tasks, their immutable versions, solutions, the lifecycle audit trail, API tokens."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from tasks_app.content import SOLUTION_ROLES, SUITE_KINDS
from tasks_app.errors import ImmutableVersionError
from tasks_app.languages import LANGUAGES
from tasks_app.repository.content import REPOSITORY_KIND


class State(models.TextChoices):
    DRAFT = "draft", "Draft"
    SUBMITTED = "submitted", "Submitted"
    VERIFIED = "verified", "Verified"
    FLAGGED = "flagged", "Flagged"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    RETIRED = "retired", "Retired"


class Tag(models.Model):
    name = models.SlugField(max_length=64, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Task(models.Model):
    """A programming task. Its content lives in versions; the task holds identity,
    ownership, tags and where it stands in the lifecycle."""

    slug = models.SlugField(max_length=120, unique=True)
    title = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="owned_tasks")
    tags = models.ManyToManyField(Tag, blank=True, related_name="tasks")
    state = models.CharField(max_length=16, choices=State.choices, default=State.DRAFT, db_index=True)
    # Maintained by the version service: the newest version, and the one a
    # reviewer last approved (which can lag behind while a new draft is edited).
    latest_version = models.ForeignKey(
        "TaskVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_version = models.ForeignKey(
        "TaskVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["slug"]
        indexes = [models.Index(fields=["state", "updated_at"])]

    def __str__(self) -> str:
        return self.slug


class ImmutableQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        raise ImmutableVersionError(f"{self.model.__name__} rows are immutable; create a new version instead.")


class TaskVersion(models.Model):
    """One immutable snapshot of a task's content. Editing makes a new version."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    statement = models.TextField()
    language = models.CharField(max_length=16, choices=[(x, x) for x in LANGUAGES], default="python")
    entry_point = models.CharField(max_length=200, blank=True)
    starter_code = models.TextField(blank=True)
    suite_kind = models.CharField(max_length=16, choices=[(x, x) for x in SUITE_KINDS])
    test_setup = models.TextField(blank=True)
    visible_tests = models.JSONField(default=list, blank=True)
    hidden_tests = models.JSONField(default=list)
    time_limit_s = models.FloatField()
    memory_limit_mb = models.PositiveIntegerField()
    # Repository tasks only (RepositoryContent.canonical): the tree's manifest
    # {path: {sha256, size, executable}}, setup commands, fail_to_pass, pass_to_pass,
    # hidden test files, protected paths. The files' bytes are Blob rows.
    repository = models.JSONField(null=True, blank=True)
    # Call suite kinds: the curator's precondition over generated inputs, and which hidden
    # tests were generated (VersionContent.generated_tests). In the hash only when set.
    precondition = models.TextField(blank=True, default="")
    generated_tests = models.JSONField(default=list, blank=True)
    # stdio: how output is compared ({} is the default, line by line; tasks_app/languages.py).
    comparator = models.JSONField(default=dict, blank=True)
    # stdio: a program that writes test inputs from a seed, and optionally a validator
    # that checks them (tasks_app/test_generators.py). In the hash only when set.
    test_generator = models.JSONField(default=dict, blank=True)
    # function_calls: the function's typed parameters and result, for every language
    # (tasks_app/function_signatures.py). In the hash only when set.
    signature = models.JSONField(default=dict, blank=True)
    changelog = models.TextField(blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="authored_versions")
    # DO_NOTHING: versions are never updated (a trigger refuses it), so deleting a
    # whole task must not try to null out parent links; the FK check is deferred.
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.DO_NOTHING, related_name="children")
    content_hash = models.CharField(max_length=64, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ImmutableQuerySet.as_manager()

    class Meta:
        ordering = ["task_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["task", "number"], name="taskversion_unique_number"),
            models.CheckConstraint(condition=Q(number__gte=1), name="taskversion_number_positive"),
            models.CheckConstraint(condition=Q(suite_kind__in=SUITE_KINDS), name="taskversion_known_suite_kind"),
            models.CheckConstraint(condition=Q(time_limit_s__gt=0), name="taskversion_time_limit_positive"),
            models.CheckConstraint(
                condition=Q(content_hash__regex=r"^[0-9a-f]{64}$"), name="taskversion_hash_is_sha256"
            ),
            models.CheckConstraint(
                condition=(Q(suite_kind=REPOSITORY_KIND) & Q(repository__isnull=False))
                | (~Q(suite_kind=REPOSITORY_KIND) & Q(repository__isnull=True)),
                name="taskversion_repository_iff_kind",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task.slug} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableVersionError(f"Version {self.pk} is immutable; save changed content as a new version.")
        super().save(*args, **kwargs)

    @property
    def short_hash(self) -> str:
        return self.content_hash[:12]


class Blob(models.Model):
    """The bytes of one file of a repository task's tree, stored once however many
    versions (of however many tasks) hold that file. Keyed by its SHA-256, so a row
    can never hold other bytes than its key names."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    size = models.PositiveIntegerField()
    data = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ImmutableQuerySet.as_manager()

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(sha256__regex=r"^[0-9a-f]{64}$"), name="blob_key_is_sha256")]

    def __str__(self) -> str:
        return f"blob {self.sha256[:12]} ({self.size} bytes)"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableVersionError(f"Blob {self.sha256} is immutable: its key is its content's hash.")
        super().save(*args, **kwargs)


class Solution(models.Model):
    """A reference or adversarial solution, part of its version's content."""

    version = models.ForeignKey(TaskVersion, on_delete=models.CASCADE, related_name="solutions")
    role = models.CharField(max_length=16, choices=[(x, x) for x in SOLUTION_ROLES])
    label = models.CharField(max_length=100)
    code = models.TextField()
    note = models.TextField(blank=True)

    objects = ImmutableQuerySet.as_manager()

    class Meta:
        ordering = ["version_id", "role", "label"]
        constraints = [
            models.UniqueConstraint(fields=["version", "label"], name="solution_unique_label"),
            models.CheckConstraint(condition=Q(role__in=SOLUTION_ROLES), name="solution_known_role"),
        ]

    def __str__(self) -> str:
        return f"{self.version} {self.role}:{self.label}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableVersionError(f"Solution {self.pk} is immutable; save changed content as a new version.")
        super().save(*args, **kwargs)


class Transition(models.Model):
    """The audit trail: who moved which task from where to where, when and why."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="transitions")
    version = models.ForeignKey(TaskVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    from_state = models.CharField(max_length=16, choices=State.choices, blank=True)
    to_state = models.CharField(max_length=16, choices=State.choices)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["task", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.task.slug}: {self.from_state or '-'} -> {self.to_state}"

    @property
    def actor_name(self) -> str:
        return self.actor.get_username() if self.actor else "system"


class ApiToken(models.Model):
    """A token for programs. Only a SHA-256 of the secret is stored; the secret is
    shown once, at creation. Scopes narrow what the token's user may do."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

"""Verifications of task versions, their executions, flags and mutant equivalence marks."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from tasks_app.models import Task, TaskVersion

# `explore`: one run per verification that generates inputs from the tests' arguments and
# judges every mutant on them next to the reference (evaluation/verification/generated/).
ROLES = ("reference", "adversarial", "mutant", "probe", "explore")
EXECUTION_STATUSES = (
    "pending", "running", "passed", "failed", "error", "timeout", "memory_exceeded", "output_exceeded",
    "sandbox_error", "compile_error", "presentation_error", "checker_error",
)  # fmt: skip


class VerificationState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    # The sandboxes failed (never the task's fault): retried, never a task flag.
    INFRASTRUCTURE_ERROR = "infrastructure_error", "Infrastructure error"


class Verification(models.Model):
    """One verification of one version under one configuration. The pair is unique:
    verifying an unchanged version with an unchanged configuration finds this row
    and runs nothing."""

    version = models.ForeignKey(TaskVersion, on_delete=models.CASCADE, related_name="verifications")
    config_hash = models.CharField(max_length=64)
    config = models.JSONField()
    state = models.CharField(max_length=24, choices=VerificationState.choices, default=VerificationState.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    summary = models.JSONField(null=True, blank=True)
    verdict = models.CharField(max_length=16, blank=True)  # verified | flagged, once done
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["version", "config_hash"], name="verification_unique_config"),
            models.CheckConstraint(condition=Q(done__lte=models.F("total")), name="verification_done_le_total"),
        ]
        indexes = [models.Index(fields=["state", "deadline_at"])]

    def __str__(self) -> str:
        return f"verification of {self.version} [{self.state}]"


class Execution(models.Model):
    """One sandbox run of one program against a version's tests. `key` is
    SHA-256(version hash, solution digest, repeat, config hash), unique within its
    verification: a replan or a redelivered message finds the row instead of adding one."""

    verification = models.ForeignKey(Verification, on_delete=models.CASCADE, related_name="executions")
    key = models.CharField(max_length=64, db_index=True)
    role = models.CharField(max_length=16, choices=[(r, r) for r in ROLES])
    subject = models.CharField(max_length=200)  # solution label, mutant digest or probe name
    description = models.CharField(max_length=300, blank=True)
    code = models.TextField()
    solution_digest = models.CharField(max_length=64)
    repeat = models.PositiveIntegerField(default=0)
    seed = models.BigIntegerField(default=0)
    status = models.CharField(max_length=24, choices=[(s, s) for s in EXECUTION_STATUSES], default="pending")
    result = models.JSONField(null=True, blank=True)
    wall_s = models.FloatField(null=True, blank=True)
    cpu_s = models.FloatField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    request_digest = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["verification_id", "role", "subject", "repeat"]
        constraints = [
            # Per verification: two tasks with the same content each get their own evidence.
            models.UniqueConstraint(fields=["verification", "key"], name="execution_unique_key"),
            models.CheckConstraint(condition=Q(role__in=ROLES), name="execution_known_role"),
            models.CheckConstraint(condition=Q(status__in=EXECUTION_STATUSES), name="execution_known_status"),
        ]
        indexes = [models.Index(fields=["verification", "status"])]

    def __str__(self) -> str:
        return f"{self.role}:{self.subject}#{self.repeat} [{self.status}]"


class Flag(models.Model):
    """Something a curator or reviewer must look at, said in a sentence."""

    verification = models.ForeignKey(Verification, on_delete=models.CASCADE, related_name="flags")
    code = models.CharField(max_length=32)
    severity = models.CharField(max_length=8, choices=[("error", "error"), ("warning", "warning")])
    message = models.TextField()
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["verification_id", "severity", "code"]
        constraints = [models.UniqueConstraint(fields=["verification", "code"], name="flag_unique_code")]

    def __str__(self) -> str:
        return f"{self.code} ({self.severity})"


class MutantEquivalence(models.Model):
    """A curator's mark that a surviving mutant behaves exactly like the reference:
    it leaves the mutation score. Kept per task and mutant digest, so the mark
    holds for later versions whose reference yields the same mutant."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="equivalent_mutants")
    mutant_digest = models.CharField(max_length=64)
    marked_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "mutant_digest"], name="equivalence_unique_mutant")]

    def __str__(self) -> str:
        return f"{self.task.slug}: mutant {self.mutant_digest[:12]} equivalent"


class ProposedTestReason(models.TextChoices):
    COUNTEREXAMPLE = "counterexample", "Counterexample to a surviving mutant"
    HIDDEN_FOR_VISIBLE = "hidden_for_visible", "Hidden test for an all-visible suite"


class ProposedTestState(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    ACCEPTED = "accepted", "Accepted"
    DISMISSED = "dismissed", "Dismissed"


class ProposedTest(models.Model):
    """A hidden test a verification proposes from a generated input: the input, the
    reference's answer, and, for a counterexample, the surviving mutant it tells apart
    and what that mutant answered. Accepting it makes a new version of the task with the
    test added to its hidden tests (evaluation/verification/generated/proposals.py)."""

    verification = models.ForeignKey(Verification, on_delete=models.CASCADE, related_name="proposed_tests")
    version = models.ForeignKey(TaskVersion, on_delete=models.CASCADE, related_name="proposed_tests")
    reason = models.CharField(max_length=24, choices=ProposedTestReason.choices)
    mutant_digest = models.CharField(max_length=64, blank=True)
    mutant_description = models.CharField(max_length=300, blank=True)
    # Python literal sources, as the sandbox wrote them (checked with ast.literal_eval there and here).
    args = models.TextField()
    kwargs = models.TextField(default="{}")
    expected = models.TextField()
    got = models.TextField(blank=True)  # the mutant's answer, or "raised ...", or "timed out"
    test = models.JSONField()  # the hidden test as the version's suite kind stores one
    digest = models.CharField(max_length=64)  # of the test: the same test is proposed once a verification
    generator = models.CharField(max_length=32)
    seed = models.BigIntegerField()
    state = models.CharField(max_length=16, choices=ProposedTestState.choices, default=ProposedTestState.PROPOSED)
    accepted_in = models.ForeignKey(
        TaskVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="accepted_proposals"
    )
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["verification_id", "reason", "id"]
        constraints = [
            models.UniqueConstraint(fields=["verification", "digest"], name="proposedtest_unique_test"),
            models.CheckConstraint(condition=Q(reason__in=ProposedTestReason.values), name="proposedtest_known_reason"),
            models.CheckConstraint(condition=Q(state__in=ProposedTestState.values), name="proposedtest_known_state"),
        ]
        indexes = [models.Index(fields=["version", "state"])]

    def __str__(self) -> str:
        return f"{self.reason} test for {self.version} [{self.state}]"


# -- rollouts and difficulty ---------------------------------------------------------------

ATTEMPT_STATUSES = EXECUTION_STATUSES


class Solver(models.Model):
    """Whoever produced completions: a model, a checkpoint, a person. Named by the
    uploader (`--solver`, the upload form, or each line's `solver`)."""

    name = models.CharField(max_length=120, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SampleUpload(models.Model):
    """One file of samples. Its digest (SHA-256 of the bytes and the default solver)
    is unique: uploading the same file again finds this row and adds nothing."""

    digest = models.CharField(max_length=64, unique=True)
    filename = models.CharField(max_length=255, blank=True)
    solver = models.ForeignKey(Solver, null=True, blank=True, on_delete=models.PROTECT, related_name="uploads")
    source = models.CharField(max_length=16, default="cli")  # cli | api | ui | trainer
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    samples = models.PositiveIntegerField(default=0)
    created = models.PositiveIntegerField(default=0)  # attempts added (the rest were there already)
    total = models.PositiveIntegerField(default=0)  # attempts to run
    done = models.PositiveIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"upload {self.digest[:12]} ({self.samples} samples)"


class Attempt(models.Model):
    """One solver's completion for one task version, and its outcome. Unique per
    (solver, version, sample_id): a repeated upload or a retried post adds nothing.
    `trusted`: the outcome was computed and posted by a trainer, not run here."""

    solver = models.ForeignKey(Solver, on_delete=models.CASCADE, related_name="attempts")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="attempts")
    version = models.ForeignKey(TaskVersion, on_delete=models.CASCADE, related_name="attempts")
    upload = models.ForeignKey(SampleUpload, null=True, blank=True, on_delete=models.SET_NULL, related_name="attempts")
    sample_id = models.CharField(max_length=200)
    code = models.TextField(blank=True)
    code_digest = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=24, choices=[(s, s) for s in ATTEMPT_STATUSES], default="pending")
    trusted = models.BooleanField(default=False)
    result = models.JSONField(null=True, blank=True)
    wall_s = models.FloatField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    tries = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["solver", "version", "sample_id"], name="attempt_unique_sample"),
        ]
        indexes = [models.Index(fields=["task", "solver", "status"]), models.Index(fields=["upload", "status"])]

    def __str__(self) -> str:
        return f"{self.solver} on {self.version} #{self.sample_id}: {self.status}"


class DifficultyFit(models.Model):
    """One item-response fit over every counted attempt at the time. Earlier fits
    are kept, for comparison. `data_digest` hashes the (solver, task, attempts,
    passes) cells it was fitted on: the same digest and parameters, the same fit."""

    state = models.CharField(max_length=16, default="running")  # running | done | failed
    params = models.JSONField(default=dict)
    data_digest = models.CharField(max_length=64, blank=True)
    solvers = models.PositiveIntegerField(default=0)
    tasks = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0)
    log_loss = models.FloatField(null=True, blank=True)
    abilities = models.JSONField(default=dict)  # solver name -> {value, low, high}
    difficulties = models.JSONField(default=dict)  # task slug -> {value, low, high, attempts}
    # Tasks with too few attempts, or none: slug -> predicted difficulty, and how well the predictor did.
    predicted = models.JSONField(default=dict)
    predictor = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"difficulty fit {self.pk} ({self.state}, {self.tasks} tasks)"


class TaskFlag(models.Model):
    """A flag on a task from looking across the catalogue or its rollouts, not from
    one verification: DUPLICATE (with the other task in `related`), TOO_EASY and
    TOO_HARD (from a difficulty fit). Recomputed by the scan that raises it: a flag
    the latest scan no longer finds is removed."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="task_flags")
    code = models.CharField(max_length=32)
    severity = models.CharField(max_length=8, choices=[("error", "error"), ("warning", "warning")])
    message = models.TextField()
    related = models.ForeignKey(Task, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    details = models.JSONField(default=dict, blank=True)
    fit = models.ForeignKey(DifficultyFit, null=True, blank=True, on_delete=models.SET_NULL, related_name="flags")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task_id", "code"]
        constraints = [
            models.UniqueConstraint(fields=["task", "code", "related"], name="task_flag_unique"),
            models.UniqueConstraint(
                fields=["task", "code"], condition=Q(related__isnull=True), name="task_flag_unique_unrelated"
            ),
        ]
        indexes = [models.Index(fields=["code"])]

    def __str__(self) -> str:
        return f"{self.task.slug}: {self.code}"


class SessionState(models.TextChoices):
    PROVISIONING = "provisioning", "Provisioning"
    READY = "ready", "Ready"
    RUNNING_STEP = "running_step", "Running a step"
    SUBMITTED = "submitted", "Submitted"
    VERIFYING = "verifying", "Verifying"
    DONE = "done", "Done"
    EXPIRED = "expired", "Expired"
    FAILED = "failed", "Failed"
    CLOSED = "closed", "Closed"


FINAL_SESSION_STATES = ("done", "expired", "failed", "closed")


class AgentSession(models.Model):
    """An agent session's record: who holds it, on which version, where it stands, and
    its verdict. The sandbox lives on a session host (evaluation/sandbox/sessions); this
    row and its steps are the durable transcript the job page and audits read."""

    id = models.CharField(max_length=32, primary_key=True)  # the session host's id
    version = models.ForeignKey(TaskVersion, on_delete=models.PROTECT, related_name="agent_sessions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_sessions")
    # A training job's sessions name it (trainer_bridge's TrainingJob id; no FK: the
    # app below the trainer does not know its models).
    job_id = models.PositiveIntegerField(null=True, blank=True, db_index=True)
    idempotency_key = models.CharField(max_length=200, blank=True)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks")
    state = models.CharField(max_length=16, choices=SessionState.choices, default=SessionState.PROVISIONING)
    reason = models.TextField(blank=True)
    environment = models.CharField(max_length=64)
    # Which session host holds it: "socket:<path>", or "embedded:<hostname>:<pid>" for a
    # web process that runs its sessions itself (its sessions end with that process).
    host = models.CharField(max_length=300, blank=True)
    limits = models.JSONField(default=dict)
    first_observation = models.JSONField(default=dict)
    lease_expires_at = models.DateTimeField()
    step_count = models.PositiveIntegerField(default=0)
    last_hash = models.CharField(max_length=64, blank=True)
    reward = models.FloatField(null=True, blank=True)
    verdict = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "idempotency_key"], condition=~Q(idempotency_key=""), name="agentsession_idempotent"
            ),
            models.CheckConstraint(condition=Q(state__in=SessionState.values), name="agentsession_known_state"),
        ]
        indexes = [models.Index(fields=["state", "lease_expires_at"]), models.Index(fields=["version", "state"])]

    def __str__(self) -> str:
        return f"session {self.id[:12]} on {self.version} [{self.state}]"


class SessionStep(models.Model):
    """One step of a session as the host answered it: the action, the observation, and
    the observation's hash, chained to the step before."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="step_rows")
    seq = models.PositiveIntegerField()
    action = models.JSONField()
    observation = models.JSONField()
    obs_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="sessionstep_unique_seq")]

    def __str__(self) -> str:
        return f"{self.session_id[:12]} step {self.seq}"

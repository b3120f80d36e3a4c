"""Training jobs over REST.

POST /api/v1/jobs registers a job against a snapshot hash and answers its token
once. The job's token then reads that snapshot, asks for rewards on it, and
posts to /api/v1/jobs/{id}/metrics and /rollouts; PATCH /api/v1/jobs/{id}
sets its state (running, finished, failed).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.plumbing import build_array_type, build_basic_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from tasks_app.api.auth import request_scopes
from tasks_app.api.permissions import HasScope
from tasks_app.errors import PermissionDenied, ValidationFailed
from tasks_app.roles import CURATOR, REVIEWER, TRAINER, has_role
from trainer_bridge.models import TrainingJob
from trainer_bridge.services import jobs

# A job's own token holds the `job` scope instead of read and write.
JOB_SCOPE_BY_METHOD = {"GET": ("read", "job"), "POST": ("write", "job"), "PATCH": ("write", "job")}


class IsTrainingParty(BasePermission):
    message = "Training jobs are for trainers, curators, reviewers and admins."

    def has_permission(self, request: Request, view: Any) -> bool:
        return has_role(request.user, CURATOR, REVIEWER, TRAINER)


class JobAPIView(APIView):
    """What every job endpoint shares: who may call it, with which scopes, how often."""

    permission_classes = [HasScope, IsTrainingParty]
    scope_by_method = JOB_SCOPE_BY_METHOD
    throttle_scope = "jobs"


def job_body(job: TrainingJob) -> dict[str, Any]:
    return {
        "id": job.pk,
        "name": job.name,
        "snapshot": job.snapshot.hash,
        "pool": job.snapshot.pool.slug,
        "reward_mode": job.reward_mode,
        "solver": job.solver,
        "state": job.state,
        "steps_total": job.steps_total,
        "steps_done": job.steps_done,
        "rollouts": job.rollouts,
        "config": job.config,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


def _writable_job(request: Request, job_id: int) -> TrainingJob:
    """The job, if this caller may see it and post to it (its token, or its registrant)."""
    job = jobs.job_get(job_id=job_id, user=request.user, token=request.auth)
    jobs.job_writable(job=job, user=request.user, token=request.auth)
    return job


def _body(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise ValidationFailed("The body must be a JSON object.", details={"body": ["Expected an object."]})
    return request.data


class JobListView(JobAPIView):
    @extend_schema(operation_id="jobs_list", responses={200: build_array_type(build_basic_type(OpenApiTypes.OBJECT))})
    def get(self, request: Request) -> Response:
        return Response([job_body(j) for j in jobs.jobs_visible(user=request.user, token=request.auth)[:500]])

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        if jobs.job_of_token(request.auth) is not None:
            raise PermissionDenied("A job's token cannot register other jobs.")
        body = _body(request)
        unknown = sorted(set(body) - {"name", "snapshot", "reward_mode", "solver", "with_hidden_tests", "steps_total",
                                      "config", "expires_in_days"})  # fmt: skip
        if unknown:
            raise ValidationFailed(f"Unknown fields: {', '.join(unknown)}.", details={"body": unknown})
        registered = jobs.job_register(
            user=request.user,
            name=body.get("name", ""),
            snapshot_hash=body.get("snapshot", ""),
            reward_mode=body.get("reward_mode", "binary"),
            solver=body.get("solver"),
            with_hidden_tests=bool(body.get("with_hidden_tests", False)),
            may_read_hidden="export:tests" in request_scopes(request),
            steps_total=body.get("steps_total"),
            config=body.get("config"),
            expires_in_days=body.get("expires_in_days"),
        )
        return Response({**job_body(registered.job), "token": registered.secret}, status=201)


class JobDetailView(JobAPIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, job_id: int) -> Response:
        job = jobs.job_get(job_id=job_id, user=request.user, token=request.auth)
        return Response({**job_body(job), "curves": jobs.job_curves(job)})

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT})
    def patch(self, request: Request, job_id: int) -> Response:
        job = _writable_job(request, job_id)
        body = _body(request)
        if set(body) - {"state"} or not isinstance(body.get("state"), str):
            raise ValidationFailed("Only `state` can change: running, finished or failed.",
                                   details={"state": ["Required."]})  # fmt: skip
        return Response(job_body(jobs.job_set_state(job=job, state=body["state"])))


class JobMetricsView(JobAPIView):
    """POST {"metrics": [{"step": 0, "values": {"reward_mean": 0.4, ...}}, ...]}."""

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request, job_id: int) -> Response:
        job = _writable_job(request, job_id)
        stored = jobs.metrics_post(job=job, entries=_body(request).get("metrics"))
        return Response({"stored": stored, "steps_done": job.steps_done, "state": job.state})


class JobRolloutsView(JobAPIView):
    """POST {"rollouts": [{"version_hash", "sample_id", "passed", "reward"?}, ...]}."""

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request, job_id: int) -> Response:
        job = _writable_job(request, job_id)
        created, skipped = jobs.rollouts_post(job=job, outcomes=_body(request).get("rollouts"))
        return Response({"created": created, "skipped": skipped})

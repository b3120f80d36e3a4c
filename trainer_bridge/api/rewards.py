"""POST /api/v1/rewards: a batch of completions scored in the sandboxes.

Body: {"completions": [{"version_hash", "completion", "id"?}], "reward"?: "binary" |
"fraction", "seed"?: int, "deadline_s"?: seconds}; header `Idempotency-Key` (or
the body's `idempotency_key`) makes a retry free. Answers 200 with every verdict,
or 202 with those in so far when the deadline passes first (GET the batch, or
post it again under the same key, to wait on). 429 with Retry-After when too
many completions are already waiting. See docs/rewards.md.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from tasks_app.api.auth import request_scopes
from tasks_app.api.permissions import HasScope
from tasks_app.errors import ValidationFailed
from tasks_app.roles import CURATOR, REVIEWER, TRAINER, has_role
from trainer_bridge.services import rewards
from trainer_bridge.services.jobs import job_of_token


class CanAskRewards(BasePermission):
    message = "Rewards are for trainers, curators, reviewers and admins."

    def has_permission(self, request: Request, view: Any) -> bool:
        return has_role(request.user, CURATOR, REVIEWER, TRAINER)


def _answer(request: Request, batch: Any, *, replayed: bool, rows: Any = None) -> Response:
    reveal = "export:tests" in request_scopes(request)
    body = rewards.batch_body(batch, reveal_hidden=reveal, replayed=replayed, rows=rows)
    return Response(body, status=200 if body["state"] == "done" else 202)


class RewardBatchView(APIView):
    permission_classes = [HasScope, CanAskRewards]
    scope_by_method = {"POST": ("reward",)}
    throttle_scope = "rewards"

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        parameters=[OpenApiParameter("Idempotency-Key", str, location=OpenApiParameter.HEADER)],
        responses={200: OpenApiTypes.OBJECT, 202: OpenApiTypes.OBJECT, 429: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request) -> Response:
        from trainer_bridge.tasks import enqueue_batch

        job = job_of_token(request.auth)
        parsed = rewards.parse_batch(request.data, idempotency_key=request.headers.get("Idempotency-Key", ""), job=job)
        batch, created = rewards.rewards_submit(user=request.user, request=parsed, job=job)
        if created:
            transaction.on_commit(lambda: enqueue_batch(batch))
        elif rewards.stale_unfinished(batch):
            enqueue_batch(batch, only_unfinished=True)  # its messages may have been lost; reruns nothing done
        rows = rewards.rewards_wait(batch, deadline_s=parsed.deadline_s)
        return _answer(request, batch, replayed=not created, rows=rows)


class RewardBatchDetailView(APIView):
    """GET a batch of yours; `?wait=S` waits up to S seconds (at most 600) for its verdicts."""

    permission_classes = [HasScope, CanAskRewards]
    scope_by_method = {"GET": ("read", "reward")}
    throttle_scope = "rewards"

    @extend_schema(parameters=[OpenApiParameter("wait", float)], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, batch_id: str) -> Response:
        batch = rewards.batch_get(batch_id=batch_id, user=request.user)
        raw = request.query_params.get("wait", "0")
        try:
            wait = float(raw)
        except ValueError:
            wait = -1.0
        if not 0 <= wait <= float(rewards.options()["MAX_DEADLINE_S"]):
            raise ValidationFailed("wait: seconds from 0 to the maximum deadline.", details={"wait": [f"Got {raw!r}."]})
        rows = rewards.rewards_wait(batch, deadline_s=wait)
        return _answer(request, batch, replayed=True, rows=rows)

"""The training jobs' pages: the list, and a job's progress with its curves.

Trainers see the jobs they registered; curators, reviewers and admins see all.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evaluation.ui import charts
from tasks_app.errors import PermissionDenied
from tasks_app.roles import CURATOR, REVIEWER, TRAINER, has_role
from tasks_app.ui.views.common import domain_errors
from trainer_bridge.services import jobs

# Metrics drawn together on one chart each; any other metric gets a chart of its own.
CHART_GROUPS = (
    ("Reward", ("reward_mean", "reward_std", "pass_rate")),
    ("Loss and KL", ("loss", "kl")),
    ("Turns and dropped groups", ("turns_mean", "dropped_groups")),
)


def _require_viewer(request: HttpRequest) -> None:
    if not has_role(request.user, CURATOR, REVIEWER, TRAINER):
        raise PermissionDenied("Training jobs are for trainers, curators, reviewers and admins.")


@login_required
@require_GET
@domain_errors
def job_list(request: HttpRequest) -> HttpResponse:
    _require_viewer(request)
    rows = jobs.jobs_visible(user=request.user, token=None).order_by("-created_at")[:200]
    return render(request, "trainer_bridge/job_list.html", {"jobs": rows})


def job_charts(curves: dict[str, list[tuple[int, float]]]) -> list[str]:
    drawn: list[str] = []
    grouped: set[str] = set()
    for title, names in CHART_GROUPS:
        series = {name: curves[name] for name in names if name in curves}
        if series:
            drawn.append(charts.lines(title, series))
            grouped.update(series)
    for name in sorted(set(curves) - grouped):
        drawn.append(charts.lines(name, {name: curves[name]}))
    return drawn


@login_required
@require_GET
@domain_errors
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    _require_viewer(request)
    job = jobs.job_get(job_id=job_id, user=request.user, token=None)
    curves = jobs.job_curves(job)
    last = job.metrics.order_by("-step").first()
    progress = round(100 * job.steps_done / job.steps_total) if job.steps_total else None
    context = {"job": job, "charts": job_charts(curves), "last": last, "progress": progress,
               "metric_rows": job.metrics.order_by("-step")[:50], "episodes": jobs.job_episodes(job)}  # fmt: skip
    return render(request, "trainer_bridge/job_detail.html", context)

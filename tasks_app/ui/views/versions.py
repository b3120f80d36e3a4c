"""Version history, one version read-only, and the side-by-side diff."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from tasks_app import diff, selectors
from tasks_app.ui.views.common import authoring_role_required, domain_errors, version_number


@login_required
@require_GET
@domain_errors
@authoring_role_required
def version_list(request: HttpRequest, slug: str) -> HttpResponse:
    task = selectors.task_get(slug=slug)
    versions = list(selectors.task_versions(task=task))
    context = {
        "task": task,
        "versions": versions,
        # Preselect the usual question: what did the newest version change?
        "default_right": versions[0].number if versions else None,
        "default_left": versions[1].number if len(versions) > 1 else None,
    }
    return render(request, "tasks_app/version_list.html", context)


@login_required
@require_GET
@domain_errors
@authoring_role_required
def version_detail(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    task = selectors.task_get(slug=slug)
    version = selectors.task_version_get(task=task, number=number)
    return render(request, "tasks_app/version_detail.html", {"task": task, "version": version})


@login_required
@require_GET
@domain_errors
@authoring_role_required
def version_diff(request: HttpRequest, slug: str) -> HttpResponse:
    """Compare ?left=N with ?right=M; by default the newest version with its parent."""
    task = selectors.task_get(slug=slug)
    raw_left, raw_right = request.GET.get("left"), request.GET.get("right")
    right_number = version_number(raw_right, field="right") if raw_right is not None else task.latest_version.number
    left_number = version_number(raw_left, field="left") if raw_left is not None else None
    right = selectors.task_version_get(task=task, number=right_number)
    if left_number is None:
        if right.parent is None:
            context = {"task": task, "right": right, "left": None, "diff": None}
            return render(request, "tasks_app/version_diff.html", context)
        left_number = right.parent.number
    left = selectors.task_version_get(task=task, number=left_number)
    result = diff.version_diff(left=left, right=right)
    context = {"task": task, "left": left, "right": right, "diff": result}
    context.update(left_label=f"v{left.number}", right_label=f"v{right.number}")
    return render(request, "tasks_app/version_diff.html", context)

"""The verification report of a version, its live progress, re-verify, and marking a
surviving mutant equivalent. Thin: selectors and services do the work."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evaluation.verification import selectors
from evaluation.verification.curator_actions import (
    mutant_mark_equivalent,
    verification_request,
    verifications_request_many,
)
from tasks_app import selectors as task_selectors
from tasks_app.selectors import TaskFilters
from tasks_app.ui.views.common import authoring_role_required, domain_errors

ROLES = ("reference", "adversarial", "mutant", "probe")


def _version(slug: str, number: int) -> tuple:
    task = task_selectors.task_get(slug=slug)
    return task, task_selectors.task_version_get(task=task, number=number)


@login_required
@require_GET
@domain_errors
@authoring_role_required
def report(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    task, version = _version(slug, number)
    verification = selectors.latest_verification(version)
    role = request.GET.get("role", "") if request.GET.get("role", "") in ROLES else ""
    status = request.GET.get("status", "")
    # "run_roles", not "roles": that name is the user's roles (tasks_app.ui.context), which the
    # navigation reads; shadowing it dropped every role-gated link from this page.
    context = {"task": task, "version": version, "verification": verification, "role": role, "status": status,
               "run_roles": ROLES}  # fmt: skip
    if verification is not None:
        context.update(selectors.verification_report(verification, role=role, status=status))
    return render(request, "evaluation/verification_report.html", context)


@login_required
@require_GET
@domain_errors
@authoring_role_required
def progress(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """The progress fragment the report polls while a verification runs."""
    task, version = _version(slug, number)
    verification = selectors.latest_verification(version)
    response = render(request, "evaluation/_progress.html", {"task": task, "version": version,
                                                              "verification": verification})  # fmt: skip
    if verification is not None and verification.state not in ("queued", "running"):
        response["HX-Refresh"] = "true"  # finished: reload once to show the whole report
    return response


@login_required
@require_POST
@domain_errors
@authoring_role_required
def rerun(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    task, version = _version(slug, number)
    verification_request(actor=request.user, version=version, force=request.POST.get("force") == "1")
    messages.success(request, f"Verification of {task.slug} v{version.number} queued.")
    return redirect("verification:report", slug=slug, number=number)


@login_required
@require_POST
@domain_errors
@authoring_role_required
def mark_equivalent(request: HttpRequest, slug: str, digest: str) -> HttpResponse:
    task = task_selectors.task_get(slug=slug)
    mutant_mark_equivalent(actor=request.user, task=task, mutant_digest=digest, note=request.POST.get("note", ""))
    messages.success(request, "Marked equivalent: it no longer counts in the mutation score once re-verified.")
    number = request.POST.get("version", "")
    if number.isdigit():
        return redirect("verification:report", slug=slug, number=int(number))
    return redirect("ui:task-detail", slug=slug)


@login_required
@require_POST
@domain_errors
@authoring_role_required
def bulk_verify(request: HttpRequest) -> HttpResponse:
    """Verify every task the list's filter matches: first a confirmation with the
    count, then (confirm=1) queue them. The filter is applied afresh at each step."""
    filters = TaskFilters.from_params(QueryDict(request.POST.get("filters", "")))
    tasks = task_selectors.task_list(filters=filters)
    if request.POST.get("confirm") != "1":
        context = {"count": tasks.exclude(state="retired").count(), "filters": request.POST.get("filters", "")}
        return render(request, "evaluation/bulk_confirm.html", context)
    queued = verifications_request_many(actor=request.user, tasks=tasks)
    messages.success(request, f"Queued {queued} verification(s); each task's report shows its progress.")
    return redirect(
        reverse("ui:task-list") + (f"?{request.POST.get('filters')}" if request.POST.get("filters") else "")
    )

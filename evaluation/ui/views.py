"""The verification report of a version, its live progress, re-verify, marking a
surviving mutant equivalent, and accepting or dismissing the tests its generated
inputs proposed (one, all, or for tasks selected in the review queue). Thin:
selectors and services do the work."""

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
from evaluation.verification.generated import decisions
from evaluation.verification.generated.proposals import AcceptResult
from evaluation.verification.generated.selectors import pending_proposals
from tasks_app import selectors as task_selectors
from tasks_app.errors import ValidationFailed
from tasks_app.models import Task
from tasks_app.selectors import TaskFilters
from tasks_app.ui.views.common import authoring_role_required, domain_errors

ROLES = ("reference", "adversarial", "mutant", "probe", "explore")


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


def _accepted(request: HttpRequest, result: AcceptResult, *, slug: str, number: int) -> HttpResponse:
    """To the new version when one was made; else back to the report, saying why not
    (a proposal made for an older version, one decided meanwhile)."""
    if result.versions:
        made = result.versions[0]
        count = result.accepted
        messages.success(request, f"Added {count} generated hidden test{'s' if count != 1 else ''} to {slug}: "
                                  f"v{made.number}, submitted for verification.")  # fmt: skip
        return redirect("ui:version-detail", slug=slug, number=made.number)
    reason = result.skipped[0]["reason"] if result.skipped else "nothing was accepted."
    messages.error(request, f"Nothing was added: {reason}")
    return redirect("verification:report", slug=slug, number=number)


@login_required
@require_POST
@domain_errors
@authoring_role_required
def proposal_accept(request: HttpRequest, slug: str, number: int, proposal_id: int) -> HttpResponse:
    """One click: this proposed test becomes a hidden test of a new version."""
    _, version = _version(slug, number)
    result = decisions.version_proposals_accept(actor=request.user, version=version, ids=[proposal_id])
    return _accepted(request, result, slug=slug, number=number)


@login_required
@require_POST
@domain_errors
@authoring_role_required
def proposals_accept_all(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """Every test the report's verification still proposes, in one new version."""
    _, version = _version(slug, number)
    result = decisions.version_proposals_accept(actor=request.user, version=version)
    return _accepted(request, result, slug=slug, number=number)


@login_required
@require_POST
@domain_errors
@authoring_role_required
def proposal_dismiss(request: HttpRequest, slug: str, number: int, proposal_id: int) -> HttpResponse:
    _, version = _version(slug, number)
    dismissed = decisions.version_proposals_dismiss(actor=request.user, version=version, ids=[proposal_id])
    if dismissed:
        messages.success(request, "Dismissed: the test is no longer proposed.")
    else:
        messages.warning(request, "That test was already accepted or dismissed.")
    return redirect("verification:report", slug=slug, number=number)


@login_required
@require_POST
@domain_errors
@authoring_role_required
def bulk_accept_proposed(request: HttpRequest) -> HttpResponse:
    """The review queue's "Accept proposed tests" for the ticked tasks: first a
    confirmation with each task's count, then (confirm=1) accept, and say per task
    what happened."""
    slugs = request.POST.getlist("task")
    if request.POST.get("confirm") != "1":
        tasks = list(Task.objects.filter(slug__in=slugs).select_related("latest_version").order_by("slug"))
        if not tasks:
            raise ValidationFailed("Tick at least one task of the review queue.", details={"task": ["Select a task."]})
        pending = pending_proposals(tasks)
        rows = [{"task": task, "proposed": len(pending.get(task.pk, []))} for task in tasks]
        return render(request, "evaluation/accept_proposed_confirm.html",
                      {"rows": rows, "total": sum(r["proposed"] for r in rows)})  # fmt: skip
    outcomes = decisions.proposed_tests_accept_for_tasks(actor=request.user, slugs=slugs)
    for outcome in outcomes:
        (messages.success if outcome.version is not None else messages.warning)(request, outcome.sentence())
    return redirect("ui:review-queue")

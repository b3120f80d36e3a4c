"""The review queue and the one endpoint every lifecycle button posts to."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from tasks_app import selectors, services
from tasks_app.errors import DomainError, PermissionDenied
from tasks_app.models import State, Task
from tasks_app.roles import REVIEWER, has_role
from tasks_app.services.lifecycle import can_review, unreviewed_authors_by_task
from tasks_app.signals import review_rows_shown
from tasks_app.ui.views.common import domain_errors
from tasks_app.ui.views.tasks import detail_context

REVIEW_PAGE_SIZE = 50
_DONE = {
    State.APPROVED: "Approved",
    State.REJECTED: "Rejected",
    State.SUBMITTED: "Submitted",
    State.DRAFT: "Moved back to draft",
    State.RETIRED: "Retired",
}


def _review_rows(user: Any, tasks: Any) -> list[dict[str, Any]]:
    tasks = list(tasks)
    is_reviewer = has_role(user, REVIEWER)
    blocked = unreviewed_authors_by_task(tasks)
    extras: dict[int, dict[str, Any]] = {task.pk: {} for task in tasks}
    for _receiver, answer in review_rows_shown.send(sender=Task, tasks=tasks):
        for pk, values in (answer or {}).items():
            extras.setdefault(pk, {}).update(values)
    return [
        {"task": task, "can_review": is_reviewer and user.pk not in blocked[task.pk], "extras": extras[task.pk]}
        for task in tasks
    ]


def _queue_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    page = Paginator(selectors.review_queue(), REVIEW_PAGE_SIZE).get_page(request.GET.get("page"))
    return {"page": page, "rows": _review_rows(request.user, page.object_list), **extra}


@login_required
@require_GET
@domain_errors
def review_queue(request: HttpRequest) -> HttpResponse:
    if not has_role(request.user, REVIEWER):
        raise PermissionDenied("Only reviewers can open the review queue.")
    return render(request, "tasks_app/review_queue.html", _queue_context(request))


@login_required
@require_POST
@domain_errors
def task_transition(request: HttpRequest, slug: str) -> HttpResponse:
    """Move a task to `to_state`.

    From the review queue with htmx the answer is the task's row, swapped in
    place (with the error, at the error's status, if refused); without
    JavaScript it is a redirect back, or the page again with the error.
    """
    task = selectors.task_get(slug=slug)
    to_state = request.POST.get("to_state", "")
    note = request.POST.get("note", "")
    from_review = request.POST.get("return_to") == "review"
    try:
        transition = services.task_transition(actor=request.user, task=task, to_state=to_state, note=note)
    except DomainError as exc:
        return _refused(request, task, exc, note=note, from_review=from_review)
    task = transition.task  # the service's copy, which carries the new state
    done = f"{_DONE.get(to_state, 'Moved')}: {task.slug} is now {task.get_state_display().lower()}."
    if from_review and request.htmx:
        row = {"task": task, "can_review": False, "done": done}
        return render(request, "tasks_app/_review_row.html", {"row": row})
    messages.success(request, done)
    if from_review:
        return redirect("ui:review-queue")
    return redirect("ui:task-detail", slug=task.slug)


def _refused(request: HttpRequest, task: Task, exc: DomainError, *, note: str, from_review: bool) -> HttpResponse:
    task.refresh_from_db()
    if from_review and request.htmx:
        row = {"task": task, "can_review": can_review(request.user, task), "error": exc, "note": note}
        return render(request, "tasks_app/_review_row.html", {"row": row}, status=exc.status)
    if from_review and has_role(request.user, REVIEWER):
        context = _queue_context(request, error=exc, error_slug=task.slug)
        for row in context["rows"]:
            if row["task"].pk == task.pk:
                row.update(error=exc, note=note)
        return render(request, "tasks_app/review_queue.html", context, status=exc.status)
    context = detail_context(request, task, error=exc, note=note)
    return render(request, "tasks_app/task_detail.html", context, status=exc.status)

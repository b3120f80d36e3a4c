"""Bulk actions on the whole filtered result: confirm with the exact count, then apply."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from tasks_app import selectors, services
from tasks_app.selectors import TaskFilters
from tasks_app.services import BulkResult
from tasks_app.ui.forms import BULK_TRANSITIONS, BulkForm
from tasks_app.ui.views.common import domain_errors

SKIPPED_SHOWN = 3


def describe_filters(filters: TaskFilters) -> str:
    shown = {k: v for k, v in filters.as_query().items() if k != "sort"}
    return ", ".join(f"{k}={v}" for k, v in shown.items())


def _tasks(count: int) -> str:
    return f"{count} task" if count == 1 else f"{count} tasks"


def action_phrase(action: str, tag: str, count: int) -> str:
    """The sentence the confirmation starts with: "Submit 37 tasks", "Add tag “x” to 37 tasks"."""
    if action == "add_tag":
        return f"Add tag “{tag}” to {_tasks(count)}"
    if action == "remove_tag":
        return f"Remove tag “{tag}” from {_tasks(count)}"
    return f"{action.capitalize()} {_tasks(count)}"


def summary(action: str, tag: str, result: BulkResult) -> str:
    if action == "add_tag":
        text = f"Added tag “{tag}” to {_tasks(result.applied)}."
    elif action == "remove_tag":
        text = f"Removed tag “{tag}” from {_tasks(result.applied)}."
    else:
        text = f"{action.capitalize()}: {result.applied} applied, {len(result.skipped)} skipped."
    if result.skipped:
        reasons = "; ".join(f"{slug}: {reason}" for slug, reason in result.skipped[:SKIPPED_SHOWN])
        more = len(result.skipped) - SKIPPED_SHOWN
        text += f" Skipped {reasons}" + (f"; and {more} more." if more > 0 else ".")
    return text


@login_required
@require_POST
@domain_errors
def bulk(request: HttpRequest) -> HttpResponse:
    """First a confirmation naming how many tasks the filter matches; with confirm=1, apply.

    The queryset is rebuilt from the filters at each step rather than from ids
    posted back, so the action covers exactly what the filter matches now.
    """
    filters = TaskFilters.from_params(QueryDict(request.POST.get("filters", "")))
    query = urlencode(filters.as_query())
    list_url = reverse("ui:task-list") + (f"?{query}" if query else "")
    form = BulkForm(request.POST)
    context = {"form": form, "list_url": list_url, "filters_text": describe_filters(filters), "filter_query": query}
    if not form.is_valid():
        return render(request, "tasks_app/bulk_confirm.html", context, status=400)
    action, tag = form.cleaned_data["action"], form.cleaned_data.get("tag_name") or ""
    queryset = selectors.task_list(filters=filters)
    if not form.cleaned_data["confirm"]:
        count = queryset.count()
        context.update({"count": count, "phrase": action_phrase(action, tag, count), "action": action, "tag": tag})
        return render(request, "tasks_app/bulk_confirm.html", context)
    if action in BULK_TRANSITIONS:
        result = services.tasks_bulk_transition(
            actor=request.user, queryset=queryset, to_state=BULK_TRANSITIONS[action], note="Bulk action."
        )
    else:
        tags = [tag]
        result = services.tasks_bulk_tag(
            actor=request.user,
            queryset=queryset,
            add=tags if action == "add_tag" else [],
            remove=tags if action == "remove_tag" else [],
        )
    text = summary(action, tag, result)
    expected = request.POST.get("expected", "")
    if expected.isdigit() and int(expected) != result.total:
        text += f" The filter matched {expected} when you confirmed and {result.total} when applied."
    (messages.warning if result.skipped else messages.success)(request, text)
    return redirect(list_url)

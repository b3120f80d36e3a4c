"""The task list, a task's page, and the create/edit form."""

from __future__ import annotations

import dataclasses
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_http_methods

from tasks_app import selectors, services
from tasks_app.content import SUITE_KINDS
from tasks_app.errors import Conflict, DomainError, PermissionDenied, ValidationFailed
from tasks_app.generated_tests import generated_tests_carried
from tasks_app.models import State, Task
from tasks_app.repository.content import REPOSITORY_KIND
from tasks_app.roles import CURATOR, REVIEWER, TRAINER, has_role
from tasks_app.selectors import SORTS, TaskFilters
from tasks_app.ui.actions import task_actions
from tasks_app.ui.editor import TaskEditor, editor_initial
from tasks_app.ui.forms import MAX_SOLUTION_ROWS, BulkForm, filter_choices, solution_form
from tasks_app.ui.views.common import authoring_role_required, domain_errors, error_response

PAGE_SIZE = 25
FILTER_PARAMS = ("q", "state", "tag", "author", "suite_kind", "sort")
SORT_LABELS = {
    "-updated": "Recently updated",
    "updated": "Least recently updated",
    "slug": "Slug, A to Z",
    "-slug": "Slug, Z to A",
    "title": "Title, A to Z",
    "-title": "Title, Z to A",
    "state": "State, A to Z",
    "-state": "State, Z to A",
}
# Sortable columns: the key they sort by, and the first direction a click asks for.
SORT_COLUMNS = {"task": "slug", "state": "state", "updated": "-updated"}


def _sort_headers(current: str) -> dict[str, dict[str, str]]:
    headers = {}
    for column, first in SORT_COLUMNS.items():
        key = first.lstrip("-")
        if current.lstrip("-") == key:
            following = key if current.startswith("-") else f"-{key}"
            aria = "descending" if current.startswith("-") else "ascending"
        else:
            following, aria = first, ""
        headers[column] = {"sort": following, "aria": aria}
    return headers


@login_required
@require_GET
def task_list(request: HttpRequest) -> HttpResponse:
    """The list with search, filters, sort and pages; the results partial alone for htmx.
    The home page: a trainer, who may not read task content, lands on their jobs."""
    if not has_role(request.user, CURATOR, REVIEWER):
        if has_role(request.user, TRAINER):
            return redirect("jobs:list")  # trainer_bridge's page, named, not imported
        return error_response(request, PermissionDenied(
            "Task pages are for curators, reviewers and admins; ask an admin for a role."))  # fmt: skip
    params = {name: request.GET.get(name, "") for name in FILTER_PARAMS}
    error: ValidationFailed | None = None
    page = None
    page_links: list[Any] = []
    filter_query = ""
    try:
        filters = TaskFilters.from_params(request.GET)
    except ValidationFailed as exc:
        error = exc
    else:
        paginator = Paginator(selectors.task_list(filters=filters), PAGE_SIZE)
        page = paginator.get_page(request.GET.get("page"))
        page_links = list(paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1))
        filter_query = urlencode(filters.as_query())
    partial = bool(request.htmx) and not request.htmx.history_restore_request
    can_bulk = has_role(request.user, CURATOR, REVIEWER)
    context: dict[str, Any] = {
        "params": params,
        "error": error,
        "page": page,
        "page_links": page_links,
        "filter_query": filter_query,
        "sort_headers": _sort_headers(params["sort"] or selectors.DEFAULT_SORT),
        "partial": partial,
        "can_bulk": can_bulk,
        "bulk_form": BulkForm(initial={"filters": filter_query}) if can_bulk else None,
    }
    if not partial:
        counts = selectors.state_counts()
        context.update(
            {
                "state_counts": [(value, label, counts.get(value, 0)) for value, label in State.choices],
                "total_count": sum(counts.values()),
                "states": State.choices,
                "suite_kinds": SUITE_KINDS,
                "sorts": [(key, SORT_LABELS.get(key, key)) for key in SORTS],
                **filter_choices(),
            }
        )
    template = "tasks_app/_task_results.html" if partial else "tasks_app/task_list.html"
    response = render(request, template, context, status=error.status if error else 200)
    # The same URL answers with a fragment or a page; caches must keep them apart.
    patch_vary_headers(response, ["HX-Request"])
    return response


def detail_context(request: HttpRequest, task: Task, **extra: Any) -> dict[str, Any]:
    version = selectors.task_version_get(task=task, number=task.latest_version.number) if task.latest_version else None
    return {
        "task": task,
        "version": version,
        "tags": [t.name for t in task.tags.all()],
        "actions": task_actions(request.user, task),
        "history": selectors.task_history(task=task),
        **extra,
    }


@login_required
@require_GET
@domain_errors
@authoring_role_required
def task_detail(request: HttpRequest, slug: str) -> HttpResponse:
    task = selectors.task_get(slug=slug)
    return render(request, "tasks_app/task_detail.html", detail_context(request, task))


def _render_editor(
    request: HttpRequest, editor: TaskEditor, *, task: Task | None = None, status: int = 200, **extra: Any
) -> HttpResponse:
    context = {
        "editor": editor,
        "form": editor.form,
        "task": task,
        "editing": editor.editing,
        "max_rows": MAX_SOLUTION_ROWS,
        **extra,
    }
    return render(request, "tasks_app/task_form.html", context, status=status)


def _require_curator(request: HttpRequest) -> None:
    if not has_role(request.user, CURATOR):
        raise PermissionDenied("Only curators can author tasks.")


@login_required
@require_http_methods(["GET", "POST"])
@domain_errors
def task_create(request: HttpRequest) -> HttpResponse:
    _require_curator(request)
    if request.method == "GET":
        return _render_editor(request, TaskEditor())
    if "add_solution" in request.POST:  # the no-JavaScript way to get one more row
        return _render_editor(request, TaskEditor(request.POST, extra_rows=1))
    editor = TaskEditor(request.POST)
    if not editor.is_valid():
        return _render_editor(request, editor, status=400)
    try:
        task = services.task_create(
            actor=request.user,
            slug=editor.cleaned["slug"],
            title=editor.cleaned["title"],
            tags=editor.cleaned["tags"],
            content=editor.content,
            changelog=editor.cleaned["changelog"],
        )
    except DomainError as exc:
        editor.add_domain_error(exc)
        return _render_editor(request, editor, status=exc.status)
    messages.success(request, f"Created {task.slug} v1.")
    return redirect("ui:task-detail", slug=task.slug)


@login_required
@require_http_methods(["GET", "POST"])
@domain_errors
def task_edit(request: HttpRequest, slug: str) -> HttpResponse:
    """Save the form as a new version, refusing an edit of an outdated version (409)."""
    _require_curator(request)
    task = selectors.task_get(slug=slug)
    if task.latest_version and task.latest_version.suite_kind == REPOSITORY_KIND:
        # A tree does not fit the form's text areas: its versions come as archives.
        return redirect("ui:archive-version", slug=task.slug)
    if request.method == "GET":
        version = selectors.task_version_get(task=task, number=task.latest_version.number)
        initial, solutions = editor_initial(task, version)
        return _render_editor(request, TaskEditor(editing=True, initial=initial, solutions=solutions), task=task)
    if "add_solution" in request.POST:
        return _render_editor(request, TaskEditor(request.POST, editing=True, extra_rows=1), task=task)
    editor = TaskEditor(request.POST, editing=True)
    if not editor.is_valid():
        return _render_editor(request, editor, task=task, status=400)
    title, tags = editor.cleaned["title"], editor.cleaned["tags"]
    latest = task.latest_version
    if latest is not None and latest.generated_tests:  # the form has no place for them: kept where unchanged
        carried = generated_tests_carried(list(latest.hidden_tests), list(latest.generated_tests),
                                          editor.content.hidden_tests)  # fmt: skip
        editor.content = dataclasses.replace(editor.content, generated_tests=carried)
    details_changed = title != task.title or tags != sorted(t.name for t in task.tags.all())
    try:
        # One transaction: a refused version (conflict, retired task) must not
        # leave a half-applied edit with only the new title saved.
        with transaction.atomic():
            result = services.task_version_create(
                actor=request.user,
                task=task,
                content=editor.content,
                changelog=editor.cleaned["changelog"],
                base_number=editor.cleaned["base_number"],
            )
            if details_changed:
                services.task_update_details(actor=request.user, task=task, title=title, tags=tags)
    except Conflict as exc:
        conflict = exc.details if isinstance(exc.details, dict) else {}
        return _render_editor(request, editor, task=task, status=exc.status, conflict=exc, conflict_details=conflict)
    except DomainError as exc:
        editor.add_domain_error(exc)
        return _render_editor(request, editor, task=task, status=exc.status)
    number = result.version.number
    if result.created:
        messages.success(request, f"Saved v{number}.")
    elif details_changed:
        messages.info(request, f"Updated the title and tags. No changes to the content: still v{number}.")
    else:
        messages.info(request, f"No changes: still v{number}.")
    return redirect("ui:task-detail", slug=task.slug)


@login_required
@require_GET
@domain_errors
@authoring_role_required
def solution_row(request: HttpRequest) -> HttpResponse:
    """One more empty solution row for the form (htmx), plus the button that asks for the next."""
    raw = request.GET.get("index", "")
    if not (raw.isascii() and raw.isdigit()) or int(raw) >= MAX_SOLUTION_ROWS:
        raise ValidationFailed(
            f"index must be a whole number below {MAX_SOLUTION_ROWS}.", details={"index": ["Invalid row index."]}
        )
    index = int(raw)
    context = {"row": solution_form(index), "number": index + 1, "next_index": index + 1, "oob": True}
    context["max_rows"] = MAX_SOLUTION_ROWS
    return render(request, "tasks_app/_solution_row.html", context)

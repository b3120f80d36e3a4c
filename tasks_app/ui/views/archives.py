"""Uploading a repository task as an archive: a new task, or a new version of one."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from tasks_app import selectors, services
from tasks_app.errors import DomainError, PermissionDenied, TooLarge, ValidationFailed
from tasks_app.models import Task
from tasks_app.roles import CURATOR, has_role
from tasks_app.ui.views.common import domain_errors


class ArchiveForm(forms.Form):
    archive = forms.FileField(
        label="Archive (zip, tar or tar.gz)",
        required=False,
        help_text="task.json, repo/, hidden_tests/, patches/reference.diff, patches/adversarial/<label>.diff.",
    )
    changelog = forms.CharField(label="Changelog", required=False, max_length=4000, widget=forms.TextInput())
    base_number = forms.IntegerField(required=False, widget=forms.HiddenInput(), min_value=1)


def _render(
    request: HttpRequest, form: ArchiveForm, *, task: Task | None, error: DomainError | None = None
) -> HttpResponse:
    context: dict[str, Any] = {"form": form, "task": task, "error": error}
    return render(request, "tasks_app/archive_form.html", context, status=error.status if error else 200)


def _archive_bytes(form: ArchiveForm) -> bytes:
    sent = form.cleaned_data.get("archive")
    if sent is None:
        raise ValidationFailed("Choose an archive to upload.", details={"archive": ["No file was sent."]})
    limit = settings.TASKS_MAX_IMPORT_FILE_BYTES
    if sent.size > limit:
        raise TooLarge(f"The archive is larger than the upload limit of {limit} bytes.")
    return sent.read()


@login_required
@require_http_methods(["GET", "POST"])
@domain_errors
def archive_upload(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    """A repository task from an archive; with `slug`, the task's next version."""
    if not has_role(request.user, CURATOR):
        raise PermissionDenied("Only curators can author tasks.")
    task = selectors.task_get(slug=slug) if slug else None
    if request.method == "GET":
        initial = {"base_number": task.latest_version.number} if task and task.latest_version else {}
        return _render(request, ArchiveForm(initial=initial), task=task)
    form = ArchiveForm(request.POST, request.FILES)
    if not form.is_valid():
        return _render(request, form, task=task, error=ValidationFailed("The form is invalid.", details=form.errors))
    try:
        result = services.task_archive_import(
            actor=request.user,
            data=_archive_bytes(form),
            task=task,
            changelog=form.cleaned_data["changelog"],
            base_number=form.cleaned_data["base_number"],
        )
    except DomainError as exc:
        return _render(request, form, task=task, error=exc)
    number = result.version.number
    if task is None:
        messages.success(request, f"Created {result.task.slug} v{number} from the archive.")
    elif result.created:
        messages.success(request, f"Saved v{number} from the archive.")
    else:
        messages.info(request, f"The archive holds the same content: still v{number}.")
    return redirect("ui:version-detail", slug=result.task.slug, number=number)

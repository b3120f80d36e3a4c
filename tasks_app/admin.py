"""Django admin for every model. Versions and solutions are read-only here too:
the admin may look, never edit; changes go through a new version."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.template.response import TemplateResponse

from tasks_app.errors import DomainError
from tasks_app.models import ApiToken, Solution, State, Tag, Task, TaskVersion, Transition
from tasks_app.services import task_transition

# Review decisions an admin can take on many tasks at once: (state, verb, what the note is).
REVIEW_ACTIONS = {
    "approve": (State.APPROVED, "Approve", "Waiver note (required for flagged tasks: why their flags are acceptable)"),
    "reject": (State.REJECTED, "Reject", "Why they are rejected (required)"),
    "request_changes": (State.DRAFT, "Request changes on", "What should change (required)"),
}


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False


class SolutionInline(admin.TabularInline):
    model = Solution
    fields = ["role", "label", "note", "code"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False


class TransitionInline(admin.TabularInline):
    model = Transition
    fields = ["created_at", "actor", "from_state", "to_state", "version", "note"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["slug", "title", "state", "owner", "latest_number", "tag_list", "updated_at"]
    list_filter = ["state", "tags", "latest_version__suite_kind", "owner"]
    search_fields = ["slug", "title", "tags__name", "latest_version__statement"]
    list_select_related = ["owner", "latest_version"]
    readonly_fields = ["state", "latest_version", "approved_version", "created_at", "updated_at"]
    fields = ["slug", "title", "owner", "tags", *readonly_fields]
    filter_horizontal = ["tags"]
    inlines = [TransitionInline]
    date_hierarchy = "updated_at"

    actions = ["approve", "reject", "request_changes"]

    def get_queryset(self, request: Any) -> Any:
        return super().get_queryset(request).prefetch_related("tags")

    @admin.action(description="Approve the selected tasks (with a waiver note for flagged ones)")
    def approve(self, request: Any, queryset: Any) -> TemplateResponse | None:
        return self._review(request, queryset, "approve")

    @admin.action(description="Reject the selected tasks")
    def reject(self, request: Any, queryset: Any) -> TemplateResponse | None:
        return self._review(request, queryset, "reject")

    @admin.action(description="Request changes on the selected tasks (back to draft)")
    def request_changes(self, request: Any, queryset: Any) -> TemplateResponse | None:
        return self._review(request, queryset, "request_changes")

    def _review(self, request: Any, queryset: Any, action: str) -> TemplateResponse | None:
        """First a page asking for the note, then the decision on each task through the
        lifecycle service (so roles, four eyes and the audit trail apply as anywhere)."""
        to_state, verb, note_label = REVIEW_ACTIONS[action]
        if request.POST.get("apply") != "1":
            context = {
                **self.admin_site.each_context(request),
                "tasks": queryset,
                "action": action,
                "verb": verb,
                "note_label": note_label,
                "opts": self.model._meta,
                "title": f"{verb} {queryset.count()} task(s)",
            }
            return TemplateResponse(request, "admin/tasks_app/task/review_action.html", context)
        note = request.POST.get("note", "")
        done, refused = 0, []
        for task in queryset:
            try:
                task_transition(actor=request.user, task=task, to_state=to_state, note=note)
                done += 1
            except DomainError as exc:
                refused.append(f"{task.slug}: {exc}")
        if done:
            self.message_user(request, f"{verb} {done} task(s).", messages.SUCCESS)
        if refused:
            self.message_user(request, "Not applied to " + "; ".join(refused[:5]), messages.WARNING)
        return None

    @admin.display(description="version")
    def latest_number(self, task: Task) -> str:
        return f"v{task.latest_version.number}" if task.latest_version else "-"

    @admin.display(description="tags")
    def tag_list(self, task: Task) -> str:
        return ", ".join(t.name for t in task.tags.all())


@admin.register(TaskVersion)
class TaskVersionAdmin(ReadOnlyAdmin):
    list_display = ["task", "number", "suite_kind", "author", "short_hash", "created_at"]
    list_filter = ["suite_kind", "language", "author"]
    search_fields = ["task__slug", "content_hash", "statement", "changelog"]
    list_select_related = ["task", "author"]
    inlines = [SolutionInline]


@admin.register(Solution)
class SolutionAdmin(ReadOnlyAdmin):
    list_display = ["version", "role", "label"]
    list_filter = ["role"]
    search_fields = ["version__task__slug", "label", "note"]
    list_select_related = ["version", "version__task"]


@admin.register(Transition)
class TransitionAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "task", "from_state", "to_state", "actor", "version"]
    list_filter = ["to_state", "from_state"]
    search_fields = ["task__slug", "note", "actor__username"]
    list_select_related = ["task", "actor", "version"]


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin):
    list_display = ["name"]
    search_fields = ["name"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "scopes", "created_at", "last_used_at", "expires_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "prefix", "user__username"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]
    fields = ["user", "name", "scopes", "expires_at", "revoked_at", *readonly_fields]

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        # Secrets are created through the API or UI, where they can be shown once.
        return False

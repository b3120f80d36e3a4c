"""Django admin for every model. Versions and solutions are read-only here too:
the admin may look, never edit; changes go through a new version."""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from tasks_app.models import ApiToken, Solution, Tag, Task, TaskVersion, Transition


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

    def get_queryset(self, request: Any) -> Any:
        return super().get_queryset(request).prefetch_related("tags")

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

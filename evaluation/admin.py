"""Verifications in the Django admin: read-only records, and an action to verify again."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages

from evaluation.models import Execution, Flag, MutantEquivalence, Verification
from evaluation.verification.curator_actions import verification_request


class ReadOnly(admin.ModelAdmin):
    """What the pipeline wrote is evidence: shown, never edited by hand."""

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False


class FlagInline(admin.TabularInline):
    model = Flag
    extra = 0
    can_delete = False
    readonly_fields = ("code", "severity", "message")
    fields = readonly_fields

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(Verification)
class VerificationAdmin(ReadOnly):
    list_display = ("version", "state", "verdict", "done", "total", "created_at", "finished_at")
    list_filter = ("state", "verdict")
    search_fields = ("version__task__slug",)
    list_select_related = ("version__task",)
    inlines = [FlagInline]
    actions = ["verify_again"]

    @admin.action(description="Verify the selected versions again (even if unchanged)")
    def verify_again(self, request: Any, queryset: Any) -> None:
        for verification in queryset.select_related("version"):
            verification_request(actor=request.user, version=verification.version, force=True)
        self.message_user(request, f"{queryset.count()} verification(s) queued.", messages.SUCCESS)


@admin.register(Execution)
class ExecutionAdmin(ReadOnly):
    list_display = ("verification", "role", "subject", "repeat", "status", "wall_s", "worker", "attempts")
    list_filter = ("role", "status")
    search_fields = ("verification__version__task__slug", "subject")
    list_select_related = ("verification__version__task",)


@admin.register(MutantEquivalence)
class MutantEquivalenceAdmin(ReadOnly):
    list_display = ("task", "mutant_digest", "marked_by", "created_at")
    search_fields = ("task__slug", "mutant_digest")

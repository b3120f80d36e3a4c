"""Input and output serializers, kept apart (DESIGN.md).

Version content is validated by `tasks_app.content.VersionContent.parse`, the
same code the UI and importers use; the serializers here describe its shape
for the OpenAPI schema and reject unknown fields at every level.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from tasks_app.content import SOLUTION_ROLES, SUITE_KINDS, VersionContent
from tasks_app.errors import ValidationFailed
from tasks_app.languages import LANGUAGES
from tasks_app.models import ApiToken, State, Task, TaskVersion, Transition
from tasks_app.services.tokens import SCOPES
from tasks_app.services.versions import SLUG_RE


class StrictSerializer(serializers.Serializer):
    """A serializer that refuses fields it does not know, instead of ignoring them."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                allowed = ", ".join(self.fields)
                raise serializers.ValidationError(
                    {name: [f"Unknown field. Allowed fields: {allowed}."] for name in unknown}
                )
        return super().to_internal_value(data)


# --- version content (schema documentation; validation is VersionContent.parse) ----------


class SolutionSchema(serializers.Serializer):
    role = serializers.ChoiceField(choices=SOLUTION_ROLES)
    label = serializers.CharField(max_length=100)
    code = serializers.CharField(allow_blank=True)
    note = serializers.CharField(required=False, allow_blank=True)


class RepositorySchema(serializers.Serializer):
    files = serializers.DictField(
        child=serializers.JSONField(),
        help_text='{path: text} or {path: {"base64": ..., "executable": bool}} (or {"text": ..., "executable": true}).',
    )
    setup_commands = serializers.ListField(child=serializers.CharField(), required=False)
    fail_to_pass = serializers.ListField(child=serializers.CharField(), help_text="pytest node ids, path::name.")
    pass_to_pass = serializers.ListField(child=serializers.CharField(), required=False)
    hidden_test_files = serializers.DictField(child=serializers.CharField(), required=False)
    protected_paths = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Glob patterns; defaults when empty."
    )


class VersionContentSchema(serializers.Serializer):
    statement = serializers.CharField(help_text="Markdown; rendered sanitised in the UI.")
    language = serializers.ChoiceField(choices=LANGUAGES, required=False, default="python")
    entry_point = serializers.CharField(required=False, allow_blank=True, help_text="The function the tests call.")
    starter_code = serializers.CharField(required=False, allow_blank=True)
    suite_kind = serializers.ChoiceField(choices=SUITE_KINDS)
    test_setup = serializers.CharField(required=False, allow_blank=True)
    visible_tests = serializers.ListField(
        child=serializers.JSONField(),
        required=False,
        help_text="Shown to solvers. assertions: assert statements; check_function/pytest: module sources; "
        'stdio: {"input", "output"} objects.',
    )
    hidden_tests = serializers.ListField(child=serializers.JSONField(), help_text="Same shape as visible_tests.")
    solutions = SolutionSchema(many=True, required=False)
    time_limit_s = serializers.FloatField(required=False, default=10.0)
    memory_limit_mb = serializers.IntegerField(required=False, default=256)
    repository = RepositorySchema(required=False, help_text="Suite kind 'repository' only (docs/repository-tasks.md).")
    precondition = serializers.CharField(
        required=False, allow_blank=True,
        help_text="assertions and check_function: source defining precondition(...) over the entry point's "
        "arguments; generated inputs it rejects are invalid (docs/generated-tests.md).",
    )  # fmt: skip
    generated_tests = serializers.ListField(
        child=serializers.JSONField(), required=False,
        help_text="Which hidden tests were generated: {hidden_index, generator, seed, reason, mutant, from_version}.",
    )  # fmt: skip
    comparator = serializers.JSONField(
        required=False,
        help_text="stdio: {mode, abs_tol?, rel_tol?}, mode one of lines (default), exact, tokens, float, "
        "unordered_lines, tokens_nocase (docs/languages.md).",
    )
    signature = serializers.JSONField(
        required=False,
        help_text='function_calls: {"params": [{"name", "type"}], "returns": type}, types int, float, bool, str '
        "and list[T]; each test is then {args, expected} (docs/languages.md).",
    )
    test_generator = serializers.JSONField(
        required=False,
        help_text="stdio: {language, source, validator?: {language, source}, count?}: a program printing one test "
        "input for the seed it is given, and one that exits 0 for a valid input on stdin (docs/languages.md).",
    )


@extend_schema_field(VersionContentSchema)
class VersionContentField(serializers.Field):
    """Parses the nested version object with VersionContent.parse, reporting field
    paths like `version.solutions[1].code`."""

    def to_internal_value(self, data: Any) -> VersionContent:
        try:
            return VersionContent.parse(data, prefix=f"{self.field_name}.")
        except ValidationFailed as exc:
            raise serializers.ValidationError(exc.details) from exc

    def to_representation(self, value: Any) -> Any:
        return value.canonical()


# --- inputs ---------------------------------------------------------------------------------


class TaskCreateInput(StrictSerializer):
    slug = serializers.RegexField(SLUG_RE.pattern, max_length=120, help_text="Lowercase letters, digits and hyphens.")
    title = serializers.CharField(max_length=200)
    tags = serializers.ListField(child=serializers.CharField(max_length=64), required=False, default=list)
    changelog = serializers.CharField(required=False, allow_blank=True, default="")
    version = VersionContentField()


class TaskUpdateInput(StrictSerializer):
    title = serializers.CharField(max_length=200, required=False)
    tags = serializers.ListField(child=serializers.CharField(max_length=64), required=False)


class VersionCreateInput(StrictSerializer):
    changelog = serializers.CharField(required=False, allow_blank=True, default="")
    base_number = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="The version the edit started from; a newer version on the server makes this a 409.",
    )
    version = VersionContentField()


class SolutionAddInput(StrictSerializer):
    role = serializers.ChoiceField(choices=SOLUTION_ROLES)
    label = serializers.CharField(max_length=100)
    code = serializers.CharField(allow_blank=True, trim_whitespace=False)
    note = serializers.CharField(required=False, allow_blank=True, default="")
    changelog = serializers.CharField(required=False, allow_blank=True, default="")


class TransitionInput(StrictSerializer):
    to_state = serializers.ChoiceField(choices=State.choices)
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=4000)


class TokenCreateInput(StrictSerializer):
    name = serializers.CharField(max_length=100)
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=SCOPES), min_length=1)
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)


# --- outputs --------------------------------------------------------------------------------


class VersionSummaryOut(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username")

    class Meta:
        model = TaskVersion
        fields = ["number", "content_hash", "suite_kind", "author", "changelog", "created_at"]


class TaskOut(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username")
    tags = serializers.SerializerMethodField()
    latest_version = VersionSummaryOut()
    approved_version = serializers.IntegerField(source="approved_version.number", allow_null=True, default=None)

    class Meta:
        model = Task
        fields = [
            "slug",
            "title",
            "owner",
            "tags",
            "state",
            "latest_version",
            "approved_version",
            "created_at",
            "updated_at",
        ]

    def get_tags(self, task: Task) -> list[str]:
        return sorted(t.name for t in task.tags.all())


class SolutionOut(serializers.Serializer):
    role = serializers.CharField()
    label = serializers.CharField()
    code = serializers.CharField()
    note = serializers.CharField()


class ManifestEntryOut(serializers.Serializer):
    sha256 = serializers.CharField()
    size = serializers.IntegerField()
    executable = serializers.BooleanField()


class RepositoryOut(serializers.Serializer):
    """What a repository version holds, the tree as its manifest: a file's bytes come
    from .../files/<path>, the whole tree from .../tree/."""

    manifest = serializers.DictField(child=ManifestEntryOut())
    setup_commands = serializers.ListField(child=serializers.CharField())
    fail_to_pass = serializers.ListField(child=serializers.CharField())
    pass_to_pass = serializers.ListField(child=serializers.CharField())
    hidden_test_files = serializers.DictField(child=serializers.CharField())
    protected_paths = serializers.ListField(child=serializers.CharField())


class VersionOut(serializers.ModelSerializer):
    task = serializers.CharField(source="task.slug")
    author = serializers.CharField(source="author.username")
    parent = serializers.IntegerField(source="parent.number", allow_null=True, default=None)
    solutions = SolutionOut(many=True)
    visible_tests = serializers.ListField(child=serializers.JSONField())
    hidden_tests = serializers.ListField(child=serializers.JSONField())
    repository = RepositoryOut(allow_null=True, help_text="Repository tasks only; null for the other kinds.")

    class Meta:
        model = TaskVersion
        fields = [
            "task", "number", "content_hash", "parent", "author", "changelog", "created_at", "statement",
            "language", "entry_point", "starter_code", "suite_kind", "test_setup", "visible_tests",
            "hidden_tests", "solutions", "time_limit_s", "memory_limit_mb", "repository", "precondition",
            "generated_tests", "comparator", "test_generator", "signature",
        ]  # fmt: skip


class VersionCreatedOut(serializers.Serializer):
    created = serializers.BooleanField(help_text="False when the content equals the newest version's.")
    version = VersionOut()


class TransitionOut(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor_name")
    version = serializers.IntegerField(source="version.number", allow_null=True, default=None)

    class Meta:
        model = Transition
        fields = ["from_state", "to_state", "actor", "version", "note", "created_at"]


class DiffRowOut(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["equal", "replace", "delete", "insert"])
    left_no = serializers.IntegerField(allow_null=True)
    left = serializers.CharField(allow_null=True)
    right_no = serializers.IntegerField(allow_null=True)
    right = serializers.CharField(allow_null=True)


class DiffSectionOut(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    status = serializers.ChoiceField(choices=["unchanged", "changed", "added", "removed"])
    unified = serializers.CharField()
    rows = DiffRowOut(many=True)


class DiffSideOut(serializers.Serializer):
    number = serializers.IntegerField()
    content_hash = serializers.CharField()


class DiffOut(serializers.Serializer):
    task = serializers.CharField()
    left = DiffSideOut()
    right = DiffSideOut()
    identical = serializers.BooleanField()
    changed_sections = serializers.ListField(child=serializers.CharField())
    sections = DiffSectionOut(many=True)


class TokenOut(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "scopes", "created_at", "last_used_at", "expires_at", "revoked_at"]


class TokenCreatedOut(TokenOut):
    token = serializers.CharField(help_text="The secret. It is shown only in this response.")

    class Meta(TokenOut.Meta):
        fields = [*TokenOut.Meta.fields, "token"]


class MeOut(serializers.Serializer):
    username = serializers.CharField()
    roles = serializers.ListField(child=serializers.CharField())
    scopes = serializers.ListField(child=serializers.CharField())


class ImportErrorOut(serializers.Serializer):
    line = serializers.IntegerField()
    task = serializers.CharField(allow_null=True)
    message = serializers.CharField()
    details = serializers.DictField()


class ImportItemOut(serializers.Serializer):
    line = serializers.IntegerField()
    slug = serializers.CharField()
    outcome = serializers.ChoiceField(choices=["created", "updated", "unchanged"])
    version = serializers.IntegerField(allow_null=True)
    content_hash = serializers.CharField()


class ImportReportOut(serializers.Serializer):
    format = serializers.CharField()
    dry_run = serializers.BooleanField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    rejected = serializers.IntegerField()
    errors = ImportErrorOut(many=True)
    items = ImportItemOut(many=True)


class ErrorBodyOut(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.JSONField()


class ErrorOut(serializers.Serializer):
    error = ErrorBodyOut()

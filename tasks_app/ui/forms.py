"""Forms of the curator UI.

Django forms here only carry values and place messages next to fields: the
rules live in the domain (tasks_app.content, the service validators), so the
UI, the API and the importers refuse the same input with the same words.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.html import format_html

from tasks_app import selectors
from tasks_app.content import PROGRAM_SUITE_KINDS, SOLUTION_ROLES
from tasks_app.errors import ValidationFailed
from tasks_app.languages import COMPARATOR_MODES, LANGUAGES
from tasks_app.services.versions import normalise_tags
from tasks_app.ui.suite_text import MODULE_SEPARATOR

MAX_SOLUTION_ROWS = 50

TESTS_HELP = format_html(
    "The format depends on the suite kind. "
    "<strong>assertions</strong>: one <code>assert</code> per line, e.g. <code>assert add(1, 2) == 3</code> "
    "(blank lines and comments are ignored). "
    "<strong>check_function</strong>: a module defining <code>check(candidate)</code>. "
    "<strong>pytest</strong>: a module with <code>test_*</code> functions. "
    "For several modules, separate them with a line <code>{}</code>. "
    '<strong>stdio</strong>: a JSON list such as <code>[{{"input": "1 2\\n", "output": "3\\n"}}]</code>.',
    MODULE_SEPARATOR,
)


def _text(rows: int = 6, *, code: bool = False, required: bool = False) -> forms.Textarea:
    attrs: dict[str, Any] = {"rows": rows}
    if code:
        # Code must reach the server exactly as typed: no spell checking or
        # autocorrection rewriting quotes and capitals.
        attrs.update({"class": "code", "spellcheck": "false", "autocapitalize": "off", "autocomplete": "off"})
    if required:
        attrs["required"] = True
    return forms.Textarea(attrs=attrs)


def _content_field(label: str, widget: forms.Widget, help_text: str = "") -> forms.CharField:
    # strip=False: whitespace is content (a trailing newline changes the hash),
    # required=False: the domain validator says what is missing, in its words.
    return forms.CharField(label=label, required=False, strip=False, widget=widget, help_text=help_text)


class TaskForm(forms.Form):
    slug = forms.CharField(
        label="Slug",
        required=False,
        help_text="The task's permanent name in URLs and exports: lowercase letters, digits and hyphens.",
        widget=forms.TextInput(attrs={"required": True, "autocapitalize": "off", "spellcheck": "false"}),
    )
    title = forms.CharField(label="Title", required=False, widget=forms.TextInput(attrs={"required": True}))
    tags = forms.CharField(
        label="Tags",
        required=False,
        help_text="Comma-separated, e.g. strings, parsing. Lowercase letters, digits and hyphens.",
    )
    statement = _content_field(
        "Statement", _text(12, required=True), "Markdown: fenced code blocks and tables are supported."
    )
    entry_point = forms.CharField(
        label="Entry point",
        required=False,
        help_text="The function the tests call, e.g. add. Not needed for stdio tasks.",
        widget=forms.TextInput(attrs={"autocapitalize": "off", "spellcheck": "false"}),
    )
    signature = forms.CharField(
        label="Signature (function_calls)", required=False,
        help_text="The function's parameters and result, for every language: (xs: list[int], k: int) -> int. "
        "Types: int, float, bool, str and list[T]. Each test is then {\"args\": [...], \"expected\": ...}.",
        widget=forms.TextInput(attrs={"autocapitalize": "off", "spellcheck": "false"}),
    )  # fmt: skip
    suite_kind = forms.CharField(
        label="Suite kind", required=False, widget=forms.Select(choices=[(k, k) for k in PROGRAM_SUITE_KINDS])
    )
    language = forms.CharField(
        label="Language", required=False, widget=forms.Select(choices=[(x, x) for x in LANGUAGES]),
        help_text="Of the solutions. Other languages than Python are judged on stdio cases or function calls.",
    )  # fmt: skip
    comparator_mode = forms.CharField(
        label="Output comparison (stdio)", required=False,
        widget=forms.Select(choices=[("", "lines (default)"), *[(m, m) for m in COMPARATOR_MODES if m != "lines"]]),
        help_text="lines: line by line, trailing spaces ignored; tokens; float (within the tolerances); "
        "unordered_lines; exact; tokens_nocase only where the task is case-blind; checker: the program below "
        "decides; interactor: the program below talks with the solution and decides.",
    )  # fmt: skip
    comparator_abs_tol = forms.CharField(label="Absolute tolerance (float)", required=False)
    comparator_rel_tol = forms.CharField(label="Relative tolerance (float)", required=False)
    checker_language = forms.CharField(
        label="Checker or interactor language", required=False,
        widget=forms.Select(choices=[(x, x) for x in LANGUAGES]),
    )  # fmt: skip
    checker_source = _content_field(
        "Checker or interactor (comparison mode checker or interactor)", _text(8, code=True),
        "Called as checker INPUT OUTPUT ANSWER, in a sandbox of its own: exit 0 accepted, 1 wrong answer, "
        "2 presentation error, 3 the checker failed (testlib's contract). Its message goes to stderr. An "
        "interactor is called the same way with the solution on its stdin and stdout, and exits the same way.",
    )  # fmt: skip
    generator_language = forms.CharField(
        label="Generator language", required=False,
        widget=forms.Select(choices=[(x, x) for x in LANGUAGES]),
    )  # fmt: skip
    generator_count = forms.CharField(label="Inputs to generate", required=False, help_text="1 to 200; 20 if blank.")
    generator_source = _content_field(
        "Test generator (stdio, optional)", _text(6, code=True),
        "Called as generator SEED, in a sandbox of its own: print one test input. Verification runs it, keeps the "
        "valid inputs the reference answers, and proposes those that catch a mutant or a wrong solution the tests "
        "miss as hidden tests.",
    )  # fmt: skip
    validator_language = forms.CharField(
        label="Validator language", required=False,
        widget=forms.Select(choices=[(x, x) for x in LANGUAGES]),
    )  # fmt: skip
    validator_source = _content_field(
        "Input validator (optional)", _text(4, code=True),
        "Reads one generated input on stdin: exit 0 when it is valid, else non-zero saying why on stderr.",
    )  # fmt: skip
    starter_code = _content_field("Starter code", _text(6, code=True), "Shown to the solver; optional.")
    test_setup = _content_field(
        "Test setup", _text(4, code=True), "Python run before the tests (helpers, imports); optional."
    )
    precondition = _content_field(
        "Precondition on generated inputs",
        _text(3, code=True),
        "assertions and check_function: def precondition(...) over the entry point's arguments, True for a valid "
        "input. Inputs the verification generates are kept only where it holds (and the reference answers).",
    )
    visible_tests = _content_field("Visible tests (examples)", _text(6, code=True), TESTS_HELP)
    hidden_tests = _content_field("Hidden tests", _text(10, code=True, required=True), TESTS_HELP)
    time_limit_s = forms.CharField(
        label="Time limit (seconds)",
        required=False,
        help_text="Wall time per run. Leave blank for the default (10).",
        widget=forms.TextInput(attrs={"inputmode": "decimal"}),
    )
    memory_limit_mb = forms.CharField(
        label="Memory limit (MB)",
        required=False,
        help_text="Leave blank for the default (256).",
        widget=forms.TextInput(attrs={"inputmode": "numeric"}),
    )
    changelog = forms.CharField(
        label="Changelog message", required=False, widget=_text(2), help_text="What changed and why."
    )
    base_number = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, editing: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if editing:
            del self.fields["slug"]
        else:
            del self.fields["base_number"]


class SolutionForm(forms.Form):
    role = forms.CharField(label="Role", required=False, widget=forms.Select(choices=[(r, r) for r in SOLUTION_ROLES]))
    label = forms.CharField(label="Label", required=False, help_text="Unique within the version, e.g. ref.")
    code = _content_field("Code", _text(8, code=True))
    note = _content_field("Note", _text(2), "Why this solution exists: what it gets wrong, for an adversarial one.")

    def is_blank(self) -> bool:
        """A row the curator left empty (the role select always has a value)."""
        return not any((self.data.get(self.add_prefix(name)) or "").strip() for name in ("label", "code", "note"))


def row_index(row: SolutionForm) -> int:
    return int(row.prefix.rsplit("-", 1)[1])


def solution_form(index: int, data: Any = None, initial: dict[str, Any] | None = None) -> SolutionForm:
    if initial is None and data is None:
        initial = {"role": "reference" if index == 0 else "adversarial"}
    return SolutionForm(data, prefix=f"solutions-{index}", initial=initial)


def filter_choices() -> dict[str, list[str]]:
    """Values for the list's tag and author selects: only those that match something."""
    return {"tag_names": selectors.tag_names(), "authors": selectors.task_owners()}


BULK_ACTIONS = {
    "add_tag": "Add tag",
    "remove_tag": "Remove tag",
    "submit": "Submit",
    "retire": "Retire",
}
BULK_TRANSITIONS = {"submit": "submitted", "retire": "retired"}


class BulkForm(forms.Form):
    action = forms.ChoiceField(label="Action", choices=list(BULK_ACTIONS.items()))
    tag_name = forms.CharField(
        label="Tag", required=False, help_text="For the tag actions.", widget=forms.TextInput(attrs={"size": 16})
    )
    filters = forms.CharField(required=False, widget=forms.HiddenInput)
    confirm = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("action") in ("add_tag", "remove_tag"):
            try:
                names = normalise_tags([data.get("tag_name") or ""], field="tag_name")
            except ValidationFailed as exc:
                for message in exc.details.get("tag_name", [exc.message]):
                    self.add_error("tag_name", message)
            else:
                if not names:
                    self.add_error("tag_name", "Name the tag to add or remove.")
                else:
                    data["tag_name"] = names[0]
        return data

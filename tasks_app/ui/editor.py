"""The create/edit form as one object: task details, version content, solution rows.

Django forms carry the values and hold the messages; the rules are the
domain's (tasks_app.content and the service validators), and this module
maps the domain's error paths back onto the fields they are about.
"""

from __future__ import annotations

import re
from typing import Any

from tasks_app.content import VersionContent
from tasks_app.errors import DomainError, ValidationFailed
from tasks_app.languages import JUDGE_PROGRAM_MODES
from tasks_app.services.versions import normalise_tags, validate_changelog, validate_slug, validate_title
from tasks_app.ui.forms import MAX_SOLUTION_ROWS, SolutionForm, TaskForm, row_index, solution_form
from tasks_app.ui.suite_text import (
    SuiteTextError,
    parse_suite_text,
    signature_from_text,
    signature_to_text,
    suite_to_text,
)

MIN_SOLUTION_ROWS = 3
_ROW_KEY = re.compile(r"^solutions-(\d+)-(?:role|label|code|note)$")
_ERROR_PATH = re.compile(r"^(?P<name>\w+)(?:\[(?P<index>\d+)\])?(?:\.(?P<sub>\w+))?$")


class TaskEditor:
    """The create/edit form: task details, version content and solution rows.

    Validation steps, in order, collecting every problem so the curator sees
    all of them at once: the details (slug, title, tags, changelog) through
    the service validators; the test texts through their per-kind format;
    then the whole content through VersionContent.parse, whose error paths
    (``solutions[1].code``, ``hidden_tests[0]``) are mapped onto the fields.
    """

    def __init__(
        self,
        data: Any = None,
        *,
        editing: bool = False,
        initial: dict[str, Any] | None = None,
        solutions: list[dict[str, Any]] | None = None,
        extra_rows: int = 0,
    ) -> None:
        self.editing = editing
        self.form = TaskForm(data, initial=initial, editing=editing)
        if data is not None:
            indices = sorted({int(m.group(1)) for key in data if (m := _ROW_KEY.match(key))})
            self.rows = [solution_form(i, data) for i in indices if i < MAX_SOLUTION_ROWS]
            wanted = len(self.rows) + extra_rows
        else:
            self.rows = [solution_form(i, initial=row) for i, row in enumerate(solutions or [])]
            # Room for one more solution, and at least a few empty rows to start with.
            wanted = max(MIN_SOLUTION_ROWS, len(self.rows) + 1) if solutions else MIN_SOLUTION_ROWS
        self.next_index = max((row_index(r) for r in self.rows), default=-1) + 1
        while len(self.rows) < min(wanted, MAX_SOLUTION_ROWS):
            self.rows.append(solution_form(self.next_index))
            self.next_index += 1
        self.banner: list[str] = []
        self.content: VersionContent | None = None
        self.cleaned: dict[str, Any] = {}

    # -- validation ------------------------------------------------------------------

    def is_valid(self) -> bool:
        form = self.form
        form.is_valid()
        for row in self.rows:
            row.is_valid()
        data = form.cleaned_data
        self.cleaned = {}
        checks = [("title", validate_title), ("tags", normalise_tags), ("changelog", validate_changelog)]
        if not self.editing:
            checks.insert(0, ("slug", validate_slug))
        for name, check in checks:
            if name in data:
                try:
                    self.cleaned[name] = check(data[name])
                except ValidationFailed as exc:
                    self.add_domain_error(exc)
        self.cleaned["base_number"] = data.get("base_number")
        raw, locators, row_of = self._raw_content(data)
        try:
            self.content = VersionContent.parse(raw)
        except ValidationFailed as exc:
            self.content = None
            self._place_content_errors(exc.details, locators, row_of)
        return self.content is not None and not self.has_errors()

    def has_errors(self) -> bool:
        return bool(self.form.errors) or any(row.errors for row in self.rows) or bool(self.banner)

    def _raw_content(self, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[str]], list[SolutionForm]]:
        kind = data.get("suite_kind") or ""
        raw: dict[str, Any] = {"suite_kind": kind or None}
        for name in ("statement", "entry_point", "starter_code", "test_setup", "precondition"):
            if name in data:
                raw[name] = data[name]
        if data.get("language"):
            raw["language"] = data["language"]
        if (data.get("signature") or "").strip():
            try:
                raw["signature"] = signature_from_text(data["signature"])
            except SuiteTextError as exc:
                self.form.add_error("signature", str(exc))
        if (data.get("generator_source") or "").strip():
            raw["test_generator"] = {"language": data.get("generator_language") or "python",
                                     "source": data["generator_source"]}  # fmt: skip
            count = (data.get("generator_count") or "").strip()
            if count:
                try:
                    raw["test_generator"]["count"] = int(count)
                except ValueError:
                    self.form.add_error("generator_count", "Enter a whole number, e.g. 20.")
            if (data.get("validator_source") or "").strip():
                raw["test_generator"]["validator"] = {"language": data.get("validator_language") or "python",
                                                      "source": data["validator_source"]}  # fmt: skip
        if data.get("comparator_mode"):
            raw["comparator"] = {"mode": data["comparator_mode"]}
            if data["comparator_mode"] in JUDGE_PROGRAM_MODES:
                raw["comparator"]["language"] = data.get("checker_language") or "python"
                raw["comparator"]["source"] = data.get("checker_source") or ""
            for name in ("abs_tol", "rel_tol"):
                text = (data.get(f"comparator_{name}") or "").strip()
                if text:
                    try:
                        raw["comparator"][name] = float(text)
                    except ValueError:
                        self.form.add_error(f"comparator_{name}", "Enter a number, e.g. 1e-6.")
        locators: dict[str, list[str]] = {}
        for name in ("visible_tests", "hidden_tests"):
            if name not in data:
                continue
            try:
                suite = parse_suite_text(kind, data[name])
            except SuiteTextError as exc:
                self.form.add_error(name, str(exc))
                # A placeholder keeps "at least one hidden test" from adding a
                # second message for the same, already explained, field.
                raw[name] = []
                locators[name] = []
                continue
            raw[name], locators[name] = suite.tests, suite.locators
        for name, number_type, message in (
            ("time_limit_s", float, "Enter a number of seconds, e.g. 10 or 2.5."),
            ("memory_limit_mb", int, "Enter a whole number of megabytes, e.g. 256."),
        ):
            value = (data.get(name) or "").strip()
            if not value:
                continue
            try:
                raw[name] = number_type(value)
            except ValueError:
                self.form.add_error(name, message)
        row_of: list[SolutionForm] = []
        solutions = []
        for row in self.rows:
            if row.is_blank() or not hasattr(row, "cleaned_data"):
                continue
            row_of.append(row)
            solutions.append({key: row.cleaned_data.get(key, "") for key in ("role", "label", "code", "note")})
        raw["solutions"] = solutions
        return raw, locators, row_of

    def _place_content_errors(self, details: Any, locators: dict[str, list[str]], row_of: list[SolutionForm]) -> None:
        if not isinstance(details, dict):
            self.banner.append(str(details))
            return
        for path, messages in details.items():
            for message in messages if isinstance(messages, list) else [messages]:
                self._place(str(path), str(message), locators, row_of)

    def _place(self, path: str, message: str, locators: dict[str, list[str]], row_of: list[SolutionForm]) -> None:
        match = _ERROR_PATH.match(path)
        name = match["name"] if match else path
        index = int(match["index"]) if match and match["index"] is not None else None
        sub = match["sub"] if match else None
        if name == "solutions" and index is not None and index < len(row_of):
            row = row_of[index]
            if sub in row.fields:
                row.add_error(sub, message)
            else:
                row.add_error(None, message)
            return
        if name in ("visible_tests", "hidden_tests") and name in self.form.fields:
            if self.form.errors.get(name) and not locators.get(name):
                return  # the text itself could not be read; that message already stands
            where = locators.get(name, [])
            locator = where[index] if index is not None and index < len(where) else ""
            if index is not None and not locator:
                locator = f"test {index + 1}"
            if sub:
                locator = f"{locator}, {sub}" if locator else sub
            self.form.add_error(name, f"{locator[:1].upper()}{locator[1:]}: {message}" if locator else message)
            return
        if path.startswith("test_generator"):
            self.form.add_error(GENERATOR_FIELDS.get(path.removeprefix("test_generator"), "generator_source"), message)
            return
        if path.startswith("signature"):
            self.form.add_error("signature", f"{path.removeprefix('signature').lstrip('.')}: {message}".lstrip(": "))
            return
        if path.startswith("comparator."):
            field_name = COMPARATOR_FIELDS.get(path.removeprefix("comparator."), "comparator_mode")
            self.form.add_error(field_name, message)
            return
        if name in self.form.fields and name != "base_number":
            if not (name in ("time_limit_s", "memory_limit_mb") and self.form.errors.get(name)):
                self.form.add_error(name, message)
            return
        self.banner.append(f"{path}: {message}")

    def add_domain_error(self, exc: DomainError) -> None:
        """Show a service's error next to the fields its details name, or as a banner."""
        details = exc.details if isinstance(exc.details, dict) else {}
        placed = False
        for path, messages in details.items():
            if not isinstance(messages, list):
                continue
            for message in messages:
                target = path if path in self.form.fields and path != "base_number" else None
                if target is None:
                    continue
                self.form.add_error(target, str(message))
                placed = True
        if not placed:
            self.banner.append(exc.message)

    # -- presentation ----------------------------------------------------------------

    def summary(self) -> list[tuple[str, str, str]]:
        """(field label, message, element id) for the error summary at the top, in page order."""
        items: list[tuple[str, str, str]] = [("", message, "") for message in self.banner]
        errors = self.form.errors
        items.extend(("", str(e), "") for e in errors.get("__all__", []))
        for name in self.form.fields:
            field = self.form[name]
            items.extend((str(field.label or name), str(e), field.auto_id) for e in errors.get(name, []))
            if name == "hidden_tests":  # the solutions come next on the page
                items.extend(self._row_summary())
        return items

    def _row_summary(self) -> list[tuple[str, str, str]]:
        items = []
        for number, row in enumerate(self.rows, 1):
            for name, errors in row.errors.items():
                if name == "__all__":
                    items.extend((f"Solution {number}", str(e), f"solution-{row.prefix}") for e in errors)
                else:
                    label = f"Solution {number}, {str(row[name].label).lower()}"
                    items.extend((label, str(e), row[name].auto_id) for e in errors)
        return items


def editor_initial(task: Any, version: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Form values that reproduce `version` exactly, so an untouched save is a no-op."""
    kind = version.suite_kind
    initial = {
        "title": task.title,
        "tags": ", ".join(t.name for t in task.tags.all()),
        "statement": version.statement,
        "entry_point": version.entry_point,
        "suite_kind": kind,
        "starter_code": version.starter_code,
        "test_setup": version.test_setup,
        "precondition": version.precondition,
        "language": version.language,
        "signature": signature_to_text(version.signature or {}),
        "comparator_mode": (version.comparator or {}).get("mode", ""),
        "comparator_abs_tol": _tolerance_text((version.comparator or {}).get("abs_tol")),
        "comparator_rel_tol": _tolerance_text((version.comparator or {}).get("rel_tol")),
        "checker_language": (version.comparator or {}).get("language", ""),
        "checker_source": (version.comparator or {}).get("source", ""),
        "generator_language": (version.test_generator or {}).get("language", ""),
        "generator_source": (version.test_generator or {}).get("source", ""),
        "generator_count": str((version.test_generator or {}).get("count", "")),
        "validator_language": ((version.test_generator or {}).get("validator") or {}).get("language", ""),
        "validator_source": ((version.test_generator or {}).get("validator") or {}).get("source", ""),
        "visible_tests": suite_to_text(kind, list(version.visible_tests)),
        "hidden_tests": suite_to_text(kind, list(version.hidden_tests)),
        "time_limit_s": _number_text(version.time_limit_s),
        "memory_limit_mb": str(version.memory_limit_mb),
        "base_number": version.number,
    }
    solutions = [{"role": s.role, "label": s.label, "code": s.code, "note": s.note} for s in version.solutions.all()]
    return initial, solutions


# Where an error in the test generator's content shows in the form.
GENERATOR_FIELDS = {".language": "generator_language", ".source": "generator_source", ".count": "generator_count",
                    ".validator.language": "validator_language", ".validator.source": "validator_source",
                    ".validator": "validator_source"}  # fmt: skip
# Where an error in the comparator's content shows in the form.
COMPARATOR_FIELDS = {"mode": "comparator_mode", "abs_tol": "comparator_abs_tol", "rel_tol": "comparator_rel_tol",
                     "language": "checker_language", "source": "checker_source"}  # fmt: skip


def _tolerance_text(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _number_text(value: float) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)

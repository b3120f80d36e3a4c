"""A task as every format hands it over, and the checks the format modules share."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from tasks_app.content import VersionContent
from tasks_app.errors import ValidationFailed
from tasks_app.services.versions import normalise_tags, validate_slug, validate_title


@dataclass(frozen=True)
class TaskRecord:
    """One validated task from one line of an import file."""

    slug: str
    title: str
    tags: list[str]
    content: VersionContent

    @cached_property
    def content_hash(self) -> str:
        return self.content.content_hash()


def slugify(value: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")


def json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


class Problems:
    """Collects field problems so one line reports all of them, not only the first."""

    def __init__(self) -> None:
        self.details: dict[str, list[str]] = {}

    def __bool__(self) -> bool:
        return bool(self.details)

    def add(self, path: str, message: str) -> None:
        messages = self.details.setdefault(path, [])
        if message not in messages:
            messages.append(message)

    def merge(self, details: Any, rename: Callable[[str], str] = str) -> None:
        if not isinstance(details, Mapping):
            self.add("task", str(details))
            return
        for path, messages in details.items():
            for message in messages if isinstance(messages, list) else [messages]:
                self.add(rename(path), str(message))

    def check_keys(self, obj: Mapping[str, Any], *, required: Iterable[str], optional: Iterable[str] = ()) -> None:
        required, optional = tuple(required), tuple(optional)
        for name in required:
            if name not in obj:
                self.add(name, "This field is required.")
        allowed = ", ".join(required + optional)
        for name in sorted(set(obj) - set(required) - set(optional)):
            self.add(name, f"Unknown field. Allowed fields: {allowed}.")

    def string(self, obj: Mapping[str, Any], name: str, *, default: str | None = None) -> str:
        value = obj.get(name, default)
        if value is None and default is not None:
            return default
        if not isinstance(value, str):
            if name in obj:
                self.add(name, f"Expected a string, got {json_type_name(value)}.")
            return ""
        return value

    def failure(self) -> ValidationFailed:
        count = sum(len(m) for m in self.details.values())
        path, messages = next(iter(self.details.items()))
        more = f" (and {count - 1} more problem(s))" if count > 1 else ""
        return ValidationFailed(f"{path}: {messages[0]}{more}", details=self.details)

    def raise_if_any(self) -> None:
        if self.details:
            raise self.failure()


def path_renamer(source_paths: Mapping[str, str]) -> Callable[[str], str]:
    """Map the platform's field paths back to the names the source file uses.

    A curator fixing a HumanEval file needs to hear "canonical_solution", not
    "solutions[0].code". The longest matching prefix wins; the rest of the
    path (an index, a subfield) is kept.
    """
    prefixes = sorted(source_paths, key=len, reverse=True)

    def rename(path: str) -> str:
        for prefix in prefixes:
            if path == prefix or path.startswith((f"{prefix}[", f"{prefix}.")):
                return source_paths[prefix] + path[len(prefix) :]
        return path

    return rename


def build_record(
    *,
    slug: Any,
    title: Any,
    tags: Any,
    content: Any,
    content_prefix: str = "",
    source_paths: Mapping[str, str] | None = None,
    problems: Problems | None = None,
) -> TaskRecord:
    """Validate every part of a task with the platform's own rules, reporting all problems at once."""
    problems = problems or Problems()
    rename = path_renamer(source_paths or {})
    checked: dict[str, Any] = {}
    checks: tuple[tuple[str, Callable[[], Any]], ...] = (
        ("slug", lambda: validate_slug(slug)),
        ("title", lambda: validate_title(title)),
        ("tags", lambda: normalise_tags(tags)),
        ("content", lambda: VersionContent.parse(content, prefix=content_prefix)),
    )
    for name, check in checks:
        try:
            checked[name] = check()
        except ValidationFailed as exc:
            problems.merge(exc.details, rename)
    problems.raise_if_any()
    return TaskRecord(slug=checked["slug"], title=checked["title"], tags=checked["tags"], content=checked["content"])

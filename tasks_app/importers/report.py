"""What an import did, or would do: counts, per-task outcomes and line-numbered errors."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Line 0 stands for the file as a whole (too large, not gzip, no tasks, ...).
WHOLE_FILE = 0


@dataclass
class ImportReport:
    format: str
    dry_run: bool = False
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def add_error(self, *, line: int, message: str, task: str | None = None, details: Any = None) -> None:
        self.errors.append({"line": line, "task": task, "message": message, "details": details or {}})

    def add_item(self, *, line: int, slug: str, outcome: str, version: int | None, content_hash: str) -> None:
        self.items.append(
            {"line": line, "slug": slug, "outcome": outcome, "version": version, "content_hash": content_hash}
        )
        setattr(self, outcome, getattr(self, outcome) + 1)

    def reject(self) -> None:
        """Turn the report into "nothing was imported": an import is all or nothing."""
        self.errors.sort(key=lambda e: e["line"])
        self.rejected = len({e["line"] for e in self.errors})
        self.created = self.updated = self.unchanged = 0
        self.items = []

    def summary(self) -> str:
        text = (
            f"{self.format or 'import'}: {self.created} created, {self.updated} updated, "
            f"{self.unchanged} unchanged, {self.rejected} rejected"
        )
        return f"{text} (dry run)" if self.dry_run else text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

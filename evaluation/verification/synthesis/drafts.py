"""A killed mutant as a task draft: the mutated tree, the reverse patch, the tests, a statement.

The reference patch takes the mutant back to the original, written the way `git diff`
writes it (`a/` and `b/` prefixes, a `\\ No newline at end of file` marker where one
is due), because the verdict and the task validation both apply patches with
`git apply`; the service checks every draft's patch with `git apply --check`.
"""

from __future__ import annotations

import base64
import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from evaluation.verification.synthesis.sources import Files

NATIVE_FORMAT = "taskplatform.task/v1"
MAX_MESSAGE_CHARS = 160
MAX_LISTED_TESTS = 8
DRAFT_NOTE = "_Drafted by `synthesize_repository_tasks` from the failing tests: edit before submitting._"


def reverse_patch(path: str, mutated: str, original: str) -> str:
    """A unified diff, git style, taking `mutated` back to `original`."""
    lines = difflib.unified_diff(
        mutated.splitlines(keepends=True), original.splitlines(keepends=True), f"a/{path}", f"b/{path}", n=3
    )
    body = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return f"diff --git a/{path} b/{path}\n{body}" if body else ""


def slug_for(*parts: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")
    return slug[:120].rstrip("-")


def trim(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 1] + "…"


def statement_draft(*, project: str, path: str, function: str, failing: dict[str, str], hidden: set[str]) -> str:
    """What fails and how, in the curator's words to come: the tests, their messages, the function."""
    lines = [f"# `{function}` in `{path}` misbehaves", "", DRAFT_NOTE, "",
             f"Some tests of {project} fail:", ""]  # fmt: skip
    for node in sorted(failing)[:MAX_LISTED_TESTS]:
        message = f": {trim(failing[node])}" if failing[node] else ""
        where = " (hidden from the agent)" if node.split("::", 1)[0] in hidden else ""
        lines.append(f"- `{node}`{where}{message}")
    if len(failing) > MAX_LISTED_TESTS:
        lines.append(f"- and {len(failing) - MAX_LISTED_TESTS} more")
    lines += ["", f"The failures come from `{function}` (`{path}`). Fix the library so that these tests pass "
              "and every other test keeps passing; do not change the tests."]  # fmt: skip
    return "\n".join(lines) + "\n"


def _file_entry(data: bytes, executable: bool) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\x00" in text:
        return {"base64": base64.b64encode(data).decode("ascii"), "executable": executable}
    return {"text": text, "executable": True} if executable else text


@dataclass
class TaskDraft:
    slug: str
    title: str
    tags: list[str]
    statement: str
    files: Files
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    reference_patch: str
    path: str  # the mutated module
    function: str
    mutation: str  # the engine's description of the change, for the curator (never in the statement)
    hidden_test_files: dict[str, str] = field(default_factory=dict)

    def content_data(self) -> dict[str, Any]:
        """The raw version content, as `VersionContent.parse` and the native JSONL read it."""
        return {
            "statement": self.statement,
            "suite_kind": "repository",
            "repository": {
                "files": {p: _file_entry(data, executable) for p, (data, executable) in sorted(self.files.items())},
                "setup_commands": [],
                "fail_to_pass": sorted(self.fail_to_pass),
                "pass_to_pass": sorted(self.pass_to_pass),
                "hidden_test_files": dict(sorted(self.hidden_test_files.items())),
                "protected_paths": [],
            },
            "solutions": [
                {"role": "reference", "label": "reference", "code": self.reference_patch,
                 "note": f"Reverts the synthesized bug: {self.mutation}."},
            ],
        }  # fmt: skip

    def native_object(self) -> dict[str, Any]:
        return {"format": NATIVE_FORMAT, "slug": self.slug, "title": self.title, "tags": sorted(self.tags),
                "version": self.content_data()}  # fmt: skip

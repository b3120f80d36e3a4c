"""Differences between two versions of a task, section by section, as plain data
that both the side-by-side UI and the JSON API render."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from tasks_app.content import VersionContent
from tasks_app.models import TaskVersion


@dataclass
class DiffRow:
    kind: str  # equal | replace | delete | insert
    left_no: int | None
    left: str | None
    right_no: int | None
    right: str | None


@dataclass
class DiffSection:
    key: str
    title: str
    status: str  # unchanged | changed | added | removed
    unified: str
    rows: list[DiffRow] = field(default_factory=list)


def _tests_text(kind: str, tests: list[Any]) -> str:
    if kind == "stdio":
        parts = []
        for i, case in enumerate(tests, 1):
            parts.append(f"# case {i}\n## input\n{case.get('input', '')}\n## output\n{case.get('output', '')}")
        return "\n".join(parts)
    if kind == "assertions":
        return "\n".join(tests)
    if kind == "function_calls":  # one call a line, so a changed expected value is one changed line
        return "\n".join(f"{json.dumps(t.get('args'))} -> {json.dumps(t.get('expected'))}" for t in tests)
    return "\n".join(f"# --- test module {i} ---\n{src}" for i, src in enumerate(tests, 1))


def _repository_sections(content: VersionContent) -> dict[str, tuple[str, str]]:
    """A repository task's parts as texts: the tree as its manifest (one line a file, so a
    changed file shows as a changed digest), the test lists, each hidden test file."""
    repo = content.repository
    assert repo is not None
    tree = "\n".join(
        f"{f.path}  {f.size} bytes  sha256:{f.sha256[:16]}{'  executable' if f.executable else ''}" for f in repo.files
    )
    sections = {
        "statement": ("Statement", content.statement),
        "interface": ("Interface", f"suite kind: {content.suite_kind}"),
        "tree": ("File tree (manifest)", tree),
        "setup_commands": ("Setup commands", "\n".join(repo.setup_commands)),
        "fail_to_pass": ("Tests that must start passing (fail_to_pass)", "\n".join(repo.fail_to_pass)),
        "pass_to_pass": ("Tests that must keep passing (pass_to_pass)", "\n".join(repo.pass_to_pass)),
        "protected_paths": ("Protected paths", "\n".join(repo.protected_paths)),
    }
    for path, text in repo.hidden_test_files:
        sections[f"hidden:{path}"] = (f"Hidden test file {path}", text)
    return sections


def _sections_of(content: VersionContent | None) -> dict[str, tuple[str, str]]:
    if content is None:
        return {}
    if content.repository is not None:
        sections = _repository_sections(content)
        for s in content.sorted_solutions():
            body = s.code + (f"\n# note: {s.note}" if s.note else "")
            sections[f"solution:{s.label}"] = (f"Patch {s.label} ({s.role})", body)
        return sections
    sections = {
        "statement": ("Statement", content.statement),
        "interface": (
            "Interface",
            f"language: {content.language}\nentry point: {content.entry_point or '-'}\n"
            f"suite kind: {content.suite_kind}",
        ),
        "starter_code": ("Starter code", content.starter_code),
        "test_setup": ("Test setup", content.test_setup),
        "visible_tests": ("Visible examples", _tests_text(content.suite_kind, content.visible_tests)),
        "hidden_tests": ("Hidden tests", _tests_text(content.suite_kind, content.hidden_tests)),
        "limits": (
            "Limits",
            f"wall time: {content.time_limit_s:g} s\nmemory: {content.memory_limit_mb} MB",
        ),
    }
    if content.signature:
        params = ", ".join(f"{p['name']}: {p['type']}" for p in content.signature.get("params") or ())
        sections["signature"] = ("Signature", f"{content.entry_point}({params}) -> {content.signature['returns']}")
    if content.precondition:
        sections["precondition"] = ("Precondition on generated inputs", content.precondition)
    if content.comparator:
        shown = {k: v for k, v in content.comparator.items() if k != "source"}
        sections["comparator"] = ("Output comparison", "\n".join(f"{k}: {v}" for k, v in shown.items()))
        if "source" in content.comparator:
            title = "Interactor" if content.comparator.get("mode") == "interactor" else "Checker"
            sections["checker"] = (title, content.comparator["source"])
    if content.test_generator:
        generator = content.test_generator
        sections["test_generator"] = ("Test generator", f"{generator.get('language')}, {generator.get('count', 20)} "
                                      f"inputs\n{generator.get('source', '')}")  # fmt: skip
        if generator.get("validator"):
            sections["validator"] = ("Input validator", str(generator["validator"].get("source", "")))
    if content.generated_tests:
        sections["generated_tests"] = ("Generated hidden tests", "\n".join(
            f"hidden test {g['hidden_index'] + 1}: {g['reason']}, {g['generator']} seed {g['seed']}"
            + (f", kills mutant {g['mutant'][:12]}" if g.get("mutant") else "")
            + (f", proposed by {g['from_version'][:12]}" if g.get("from_version") else "")
            for g in content.generated_tests
        ))  # fmt: skip
    for s in content.sorted_solutions():
        body = s.code + (f"\n# note: {s.note}" if s.note else "")
        sections[f"solution:{s.label}"] = (f"Solution {s.label} ({s.role})", body)
    return sections


def _rows(a: list[str], b: list[str]) -> list[DiffRow]:
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(DiffRow("equal", i1 + k + 1, a[i1 + k], j1 + k + 1, b[j1 + k]) for k in range(i2 - i1))
            continue
        span = max(i2 - i1, j2 - j1)
        for k in range(span):
            li, rj = i1 + k, j1 + k
            left = a[li] if li < i2 else None
            right = b[rj] if rj < j2 else None
            kind = "replace" if left is not None and right is not None else ("delete" if right is None else "insert")
            rows.append(
                DiffRow(kind, li + 1 if left is not None else None, left, rj + 1 if right is not None else None, right)
            )
    return rows


def diff_contents(
    left: VersionContent | None, right: VersionContent | None, *, labels: tuple[str, str]
) -> list[DiffSection]:
    a_sections, b_sections = _sections_of(left), _sections_of(right)
    keys = list(a_sections) + [k for k in b_sections if k not in a_sections]
    out = []
    for key in keys:
        title = (b_sections.get(key) or a_sections[key])[0]
        a_text = a_sections[key][1] if key in a_sections else None
        b_text = b_sections[key][1] if key in b_sections else None
        a_lines = (a_text or "").splitlines()
        b_lines = (b_text or "").splitlines()
        if a_text is None:
            status = "added"
        elif b_text is None:
            status = "removed"
        else:
            status = "unchanged" if a_text == b_text else "changed"
        unified = "\n".join(
            difflib.unified_diff(
                a_lines, b_lines, fromfile=f"{labels[0]}/{key}", tofile=f"{labels[1]}/{key}", lineterm=""
            )
        )
        out.append(DiffSection(key=key, title=title, status=status, unified=unified, rows=_rows(a_lines, b_lines)))
    return out


def version_diff(*, left: TaskVersion, right: TaskVersion) -> dict[str, Any]:
    """The diff between two versions of the same task as JSON-ready data."""
    labels = (f"v{left.number}", f"v{right.number}")
    sections = diff_contents(VersionContent.from_version(left), VersionContent.from_version(right), labels=labels)
    return {
        "task": left.task.slug,
        "left": {"number": left.number, "content_hash": left.content_hash},
        "right": {"number": right.number, "content_hash": right.content_hash},
        "identical": left.content_hash == right.content_hash,
        "changed_sections": [s.key for s in sections if s.status != "unchanged"],
        "sections": [asdict(s) for s in sections],
    }


# -- patches (repository tasks) -----------------------------------------------------------

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass
class PatchFile:
    """One file of a unified diff, as side-by-side rows like a version diff's."""

    path: str
    headers: list[str] = field(default_factory=list)
    rows: list[DiffRow] = field(default_factory=list)


def patch_files(text: str) -> list[PatchFile]:
    """Split a `git diff` into files and its hunks into rows: context lines on both sides,
    removed lines left, added lines right, a removal followed by an addition paired."""
    files: list[PatchFile] = []
    current: PatchFile | None = None
    removed: list[tuple[int, str]] = []
    added: list[tuple[int, str]] = []
    left_no = right_no = 0

    def flush() -> None:
        if current is not None:
            for k in range(max(len(removed), len(added))):
                left = removed[k] if k < len(removed) else (None, None)
                right = added[k] if k < len(added) else (None, None)
                kind = (
                    "replace"
                    if left[1] is not None and right[1] is not None
                    else "delete"
                    if right[1] is None
                    else "insert"
                )
                current.rows.append(DiffRow(kind, left[0], left[1], right[0], right[1]))
        removed.clear()
        added.clear()

    for line in text.splitlines():
        if line.startswith("diff --git ") or current is None:
            flush()
            current = PatchFile(path=line.rsplit(" b/", 1)[-1] if line.startswith("diff --git ") else "")
            files.append(current)
            if line.startswith("diff --git "):
                continue
        hunk = _HUNK.match(line)
        if hunk:
            flush()
            left_no, right_no = int(hunk.group(1)), int(hunk.group(2))
            current.rows.append(DiffRow("equal", None, line, None, line))
        elif not current.rows:
            current.headers.append(line)  # index, mode, ---/+++ lines before the first hunk
        elif line.startswith("-"):
            removed.append((left_no, line[1:]))
            left_no += 1
        elif line.startswith("+"):
            added.append((right_no, line[1:]))
            right_no += 1
        elif line.startswith(" ") or line == "":
            flush()
            current.rows.append(DiffRow("equal", left_no, line[1:], right_no, line[1:]))
            left_no, right_no = left_no + 1, right_no + 1
    flush()
    return files

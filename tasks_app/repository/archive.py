"""The archive layout of a repository task, and turning an upload into a version's raw content.

    task.json                       slug, title, statement, fail_to_pass, ... (ARCHIVE_KEYS)
    repo/...                        the tree the agent edits
    hidden_tests/...                hidden test files, paths relative to the repo root
    patches/reference.diff          the reference fix, a `git diff` against repo/
    patches/adversarial/<label>.diff  wrong or reward-hacking fixes, one per file

Everything may sit under one top-level directory (what `tar czf t.tgz mytask/`
makes). The raw content this builds goes through `VersionContent.parse` like
every other input; its field paths are renamed back to member names so an
author hears `repo/src/x.py`, not `repository.files["src/x.py"]`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tasks_app.errors import ValidationFailed
from tasks_app.repository.content import REPOSITORY_KIND
from tasks_app.repository.paths import BadPath, normalise_path
from tasks_app.repository.reading import ArchiveProblem, Member, read_members

TASK_FILE = "task.json"
TREE_DIR = "repo/"
HIDDEN_DIR = "hidden_tests/"
REFERENCE_PATCH = "patches/reference.diff"
ADVERSARIAL_DIR = "patches/adversarial/"
REFERENCE_LABEL = "reference"
# What task.json may hold: the task's details and the version's non-file content.
TASK_KEYS = ("slug", "title", "tags", "changelog")
CONTENT_KEYS = ("statement", "time_limit_s", "memory_limit_mb")
REPOSITORY_KEYS = ("setup_commands", "fail_to_pass", "pass_to_pass", "protected_paths")
ARCHIVE_KEYS = TASK_KEYS + CONTENT_KEYS + REPOSITORY_KEYS
IGNORED_PREFIXES = ("__MACOSX/",)  # resource forks macOS adds to zips


@dataclass(frozen=True)
class ArchiveTask:
    """An archive read and laid out; `content` is raw input for VersionContent.parse."""

    slug: Any
    title: Any
    tags: Any
    changelog: str
    content: dict[str, Any]
    rename: Callable[[str], str]


def member_error(member: str | None, message: str) -> ValidationFailed:
    key = f"archive[{json.dumps(member, ensure_ascii=False)}]" if member else "archive"
    where = f"{member}: " if member else ""
    return ValidationFailed(f"{where}{message}", details={key: [message]})


def archive_task(data: bytes) -> ArchiveTask:
    """Read an uploaded archive and lay it out; ValidationFailed naming the bad member."""
    try:
        members = read_members(data)
    except ArchiveProblem as exc:
        raise member_error(exc.member, str(exc)) from exc
    return _layout(members)


def _strip_wrapper(members: list[Member]) -> list[Member]:
    names = [m.name for m in members if not m.name.startswith(IGNORED_PREFIXES)]
    if TASK_FILE in names or not names:
        return members
    top = {n.split("/", 1)[0] for n in names}
    if len(top) == 1 and f"{next(iter(top))}/{TASK_FILE}" in names:
        cut = len(next(iter(top))) + 1
        return [Member(m.name[cut:], m.data, m.executable, m.is_dir) for m in members if len(m.name) > cut]
    return members


def _text(member: Member) -> str:
    try:
        return member.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise member_error(member.name, f"Not valid UTF-8 text (byte {exc.start}).") from exc


def _task_json(member: Member | None) -> dict[str, Any]:
    if member is None:
        raise member_error(TASK_FILE, f"The archive has no {TASK_FILE} (at its root or under one top directory).")

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("a key appears twice in one object")
        return dict(pairs)

    try:
        meta = json.loads(_text(member), object_pairs_hook=no_duplicates)
    except (ValueError, RecursionError) as exc:
        raise member_error(TASK_FILE, f"Not valid JSON: {exc}.") from exc
    if not isinstance(meta, dict):
        raise member_error(TASK_FILE, "Expected a JSON object.")
    unknown = sorted(set(meta) - set(ARCHIVE_KEYS))
    if unknown:
        raise ValidationFailed(
            f"{TASK_FILE}: unknown key(s) {', '.join(unknown)}.",
            details={f"{TASK_FILE}.{k}": [f"Unknown key. Allowed: {', '.join(ARCHIVE_KEYS)}."] for k in unknown},
        )
    return meta


def _layout(members: list[Member]) -> ArchiveTask:
    members = _strip_wrapper(members)
    task_member: Member | None = None
    files: dict[str, Any] = {}
    hidden: dict[str, str] = {}
    patches: list[tuple[str, str, Member]] = []  # (role, label, member)
    seen: dict[tuple[str, str], str] = {}
    for member in members:
        name = member.name
        if name.startswith(IGNORED_PREFIXES) or member.is_dir:
            continue  # a directory entry carries nothing the files under it do not
        if name == TASK_FILE:
            task_member = member
        elif name.startswith((TREE_DIR, HIDDEN_DIR)):
            prefix = TREE_DIR if name.startswith(TREE_DIR) else HIDDEN_DIR
            try:
                path = normalise_path(name[len(prefix) :])
            except BadPath as exc:
                raise member_error(name, str(exc)) from exc
            if (prefix, path) in seen:
                raise member_error(name, f"The archive has this file twice (also as {seen[(prefix, path)]}).")
            seen[(prefix, path)] = name
            if prefix == TREE_DIR:
                files[path] = {"base64": base64.b64encode(member.data).decode("ascii"), "executable": member.executable}
            else:
                hidden[path] = _text(member)
        elif name == REFERENCE_PATCH:
            patches.insert(0, ("reference", REFERENCE_LABEL, member))
        elif name.startswith(ADVERSARIAL_DIR) and name.endswith(".diff") and "/" not in name[len(ADVERSARIAL_DIR) :]:
            patches.append(("adversarial", name[len(ADVERSARIAL_DIR) : -len(".diff")], member))
        else:
            raise member_error(
                name,
                "Not part of the layout: task.json, repo/, hidden_tests/, patches/reference.diff and "
                "patches/adversarial/<label>.diff (docs/repository-tasks.md).",
            )
    meta = _task_json(task_member)
    solutions = [{"role": role, "label": label, "code": _text(m)} for role, label, m in patches]
    repository = {"files": files, "hidden_test_files": hidden}
    repository.update({k: meta[k] for k in REPOSITORY_KEYS if k in meta})
    content: dict[str, Any] = {"suite_kind": REPOSITORY_KIND, "repository": repository, "solutions": solutions}
    content.update({k: meta[k] for k in CONTENT_KEYS if k in meta})
    changelog = meta.get("changelog") if isinstance(meta.get("changelog"), str) else ""
    return ArchiveTask(
        slug=meta.get("slug"),
        title=meta.get("title"),
        tags=meta.get("tags", []),
        changelog=changelog,
        content=content,
        rename=_renamer([m.name for _, _, m in patches]),
    )


def _renamer(patch_members: list[str]) -> Callable[[str], str]:
    """Field paths of the parsed content -> the archive's member names."""

    def rename(path: str) -> str:
        for field, directory in (("repository.files", TREE_DIR), ("repository.hidden_test_files", HIDDEN_DIR)):
            if path.startswith(f"{field}[") and path.endswith("]"):
                try:
                    return f"archive[{json.dumps(directory + json.loads(path[len(field) + 1 : -1]))}]"
                except (ValueError, TypeError):
                    return path
        if path.startswith("solutions["):
            index = path[len("solutions[") :].split("]", 1)[0]
            if index.isdigit() and int(index) < len(patch_members):
                return f"archive[{json.dumps(patch_members[int(index)])}]"
        if path.startswith("repository."):
            return f"{TASK_FILE}.{path[len('repository.') :]}"
        if path.split("[", 1)[0].split(".", 1)[0] in CONTENT_KEYS:
            return f"{TASK_FILE}.{path}"
        return path

    return rename

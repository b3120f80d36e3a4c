"""The `repository` part of a version's content: a file tree, setup, tests, protected paths.

`parse_repository` validates the raw `repository` object of a version (called by
`tasks_app.content` for suite kind `repository`, so every way in goes through it);
`RepositoryContent.canonical` is what the version's hash covers. The tree enters
the hash as a manifest of SHA-256 digests, so the hash covers every byte without
the hash input growing with the tree.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from tasks_app.repository.patches import PatchCheck, TreeFile, patches_check
from tasks_app.repository.paths import (
    DEFAULT_PROTECTED_PATHS,
    BadPath,
    check_pattern,
    directory_conflicts,
    is_protected,
    normalise_path,
)

REPOSITORY_KIND = "repository"
REPOSITORY_FIELDS = (
    "files",
    "setup_commands",
    "fail_to_pass",
    "pass_to_pass",
    "hidden_test_files",
    "protected_paths",
)
FILE_FIELDS = ("text", "base64", "executable")
MAX_SETUP_COMMANDS = 50
MAX_SETUP_COMMAND_BYTES = 4096
MAX_NODE_IDS = 5000
MAX_NODE_ID_CHARS = 1000
MAX_HIDDEN_FILES = 1000
MAX_PROTECTED_PATTERNS = 200

Report = Callable[[str, str], None]


@dataclass(frozen=True)
class RepoFile:
    path: str
    sha256: str
    size: int
    executable: bool = False

    def manifest_entry(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "size": self.size, "executable": self.executable}


@dataclass(frozen=True)
class RepositoryContent:
    files: tuple[RepoFile, ...]  # sorted by path
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...] = ()
    setup_commands: tuple[str, ...] = ()  # in the order they run
    hidden_test_files: tuple[tuple[str, str], ...] = ()  # (path, text), sorted by path
    protected_paths: tuple[str, ...] = tuple(sorted(DEFAULT_PROTECTED_PATHS))
    # The bytes of the files, by digest: present after parsing, empty when read back
    # from a saved version (the bytes live in Blob rows; the manifest names them).
    blobs: Mapping[str, bytes] = field(default_factory=dict, compare=False, repr=False)

    def manifest(self) -> dict[str, dict[str, Any]]:
        return {f.path: f.manifest_entry() for f in self.files}

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def canonical(self) -> dict[str, Any]:
        """Plain data for the hash and for storage on the version (TaskVersion.repository).

        Node ids and protected patterns are sets in meaning, so they are sorted;
        setup commands run in order, so their order is kept.
        """
        return {
            "manifest": self.manifest(),
            "setup_commands": list(self.setup_commands),
            "fail_to_pass": list(self.fail_to_pass),
            "pass_to_pass": list(self.pass_to_pass),
            "hidden_test_files": dict(self.hidden_test_files),
            "protected_paths": list(self.protected_paths),
        }

    @classmethod
    def from_stored(cls, data: Mapping[str, Any]) -> RepositoryContent:
        """The content of a saved version's `repository` column (trusted: parsed on the way in)."""
        return cls(
            files=tuple(
                RepoFile(path, e["sha256"], int(e["size"]), bool(e["executable"]))
                for path, e in sorted(data["manifest"].items())
            ),
            setup_commands=tuple(data["setup_commands"]),
            fail_to_pass=tuple(data["fail_to_pass"]),
            pass_to_pass=tuple(data["pass_to_pass"]),
            hidden_test_files=tuple(sorted(data["hidden_test_files"].items())),
            protected_paths=tuple(data["protected_paths"]),
        )

    def input_form(self, blobs: Mapping[str, bytes]) -> dict[str, Any]:
        """The raw `repository` object that `parse_repository` turns back into this content:
        what an export writes and an edit starts from. Text files go as strings, the rest
        (and executables) as objects."""
        files: dict[str, Any] = {}
        for f in self.files:
            data = blobs[f.sha256]
            text = _as_text(data)
            if text is None:
                files[f.path] = {"base64": base64.b64encode(data).decode("ascii"), "executable": f.executable}
            elif f.executable:
                files[f.path] = {"text": text, "executable": True}
            else:
                files[f.path] = text
        form = {k: v for k, v in self.canonical().items() if k != "manifest"}
        return {"files": files, **form}

    def tree_files(self) -> dict[str, TreeFile]:
        return {f.path: TreeFile(self.blobs[f.sha256], f.executable) for f in self.files}


def _as_text(data: bytes) -> str | None:
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _key(name: str, path: str) -> str:
    return f"repository.{name}[{json.dumps(path, ensure_ascii=False)}]"


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


# -- parsing ------------------------------------------------------------------------------


def parse_repository(value: Any, report: Report) -> RepositoryContent | None:
    """Validate the raw `repository` object; report each problem at its field path.
    None when anything was wrong (the caller raises with every problem at once)."""
    if not isinstance(value, dict):
        report("repository", f"Required for suite kind 'repository': an object with {', '.join(REPOSITORY_FIELDS)}.")
        return None
    for name in sorted(set(value) - set(REPOSITORY_FIELDS)):
        report(f"repository.{name}", f"Unknown field. Allowed fields: {', '.join(REPOSITORY_FIELDS)}.")
    problems: list[str] = []

    def note(path: str, message: str) -> None:
        problems.append(path)
        report(path, message)

    files, blobs = _files(value.get("files"), note)
    hidden = _hidden_files(value.get("hidden_test_files"), note)
    for file_path, under in directory_conflicts(sorted(set(files) | set(hidden))):
        note(_key("files", under), f"{file_path!r} is a file, so {under!r} cannot be under it.")
    setup = _setup_commands(value.get("setup_commands"), note)
    known = set(files) | set(hidden)
    f2p = _node_ids(value.get("fail_to_pass"), "fail_to_pass", known, note, required=True)
    p2p = _node_ids(value.get("pass_to_pass"), "pass_to_pass", known, note, required=False)
    for node in sorted(set(f2p) & set(p2p)):
        note("repository.pass_to_pass", f"{node!r} is also in fail_to_pass; a test is in one list or the other.")
    protected = _protected(value.get("protected_paths"), note)
    if problems:
        return None
    return RepositoryContent(
        files=tuple(files[p] for p in sorted(files)),
        setup_commands=tuple(setup),
        fail_to_pass=tuple(sorted(f2p)),
        pass_to_pass=tuple(sorted(p2p)),
        hidden_test_files=tuple(sorted(hidden.items())),
        protected_paths=protected,
        blobs=blobs,
    )


def _file_bytes(raw: Any, key: str, note: Report) -> tuple[bytes, bool] | None:
    if isinstance(raw, str):
        raw = {"text": raw}
    if not isinstance(raw, dict):
        note(key, f'Expected the file\'s text, or {{"base64": ...}} / {{"text": ...}}, got {_type(raw)}.')
        return None
    for extra in sorted(set(raw) - set(FILE_FIELDS)):
        note(key, f"Unknown field {extra!r}. Allowed fields: {', '.join(FILE_FIELDS)}.")
    executable = raw.get("executable", False)
    if not isinstance(executable, bool):
        note(key, "executable must be true or false.")
    if ("text" in raw) == ("base64" in raw):
        note(key, "Give exactly one of text and base64.")
        return None
    if "text" in raw:
        if not isinstance(raw["text"], str):
            note(key, f"text must be a string, got {_type(raw['text'])}.")
            return None
        try:
            return raw["text"].encode("utf-8"), executable is True
        except UnicodeEncodeError:
            note(key, "The text contains an unpaired surrogate; text must be valid Unicode.")
            return None
    if not isinstance(raw["base64"], str):
        note(key, f"base64 must be a string, got {_type(raw['base64'])}.")
        return None
    try:
        return base64.b64decode(raw["base64"], validate=True), executable is True
    except (binascii.Error, ValueError):
        note(key, "base64 is not valid base64.")
        return None


def _files(value: Any, note: Report) -> tuple[dict[str, RepoFile], dict[str, bytes]]:
    files: dict[str, RepoFile] = {}
    blobs: dict[str, bytes] = {}
    if not isinstance(value, dict) or not value:
        note("repository.files", f"Required: an object mapping each path to its content, got {_type(value)}.")
        return files, blobs
    max_files, max_file = settings.TASKS_REPO_MAX_FILES, settings.TASKS_REPO_MAX_FILE_BYTES
    max_total = settings.TASKS_REPO_MAX_BYTES
    if len(value) > max_files:
        note("repository.files", f"Too many files: {len(value)}, the limit is {max_files}.")
        return files, blobs
    total = 0
    for raw_path, raw in value.items():
        try:
            path = normalise_path(raw_path)
        except BadPath as exc:
            note(_key("files", str(raw_path)), str(exc))
            continue
        key = _key("files", path)
        if path in files:
            note(key, f"Duplicate path: {raw_path!r} and another entry both name {path!r}.")
            continue
        decoded = _file_bytes(raw, key, note)
        if decoded is None:
            continue
        data, executable = decoded
        if len(data) > max_file:
            note(key, f"Too large: {len(data)} bytes, the limit for one file is {max_file} bytes.")
            continue
        total += len(data)
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        files[path] = RepoFile(path, digest, len(data), executable)
    if total > max_total:
        note("repository.files", f"The tree is too large: {total} bytes, the limit is {max_total} bytes.")
    return files, blobs


def _hidden_files(value: Any, note: Report) -> dict[str, str]:
    hidden: dict[str, str] = {}
    if value is None:
        return hidden
    if not isinstance(value, dict):
        note("repository.hidden_test_files", f"Expected an object mapping each path to its text, got {_type(value)}.")
        return hidden
    if len(value) > MAX_HIDDEN_FILES:
        note("repository.hidden_test_files", f"Too many files: {len(value)}, the limit is {MAX_HIDDEN_FILES}.")
        return hidden
    limit = settings.TASKS_MAX_CODE_BYTES
    for raw_path, text in value.items():
        try:
            path = normalise_path(raw_path)
        except BadPath as exc:
            note(_key("hidden_test_files", str(raw_path)), str(exc))
            continue
        key = _key("hidden_test_files", path)
        if path in hidden:
            note(key, f"Duplicate path: {raw_path!r} and another entry both name {path!r}.")
        elif not isinstance(text, str):
            note(key, f"Expected the file's text, got {_type(text)}.")
        elif "\x00" in text:
            note(key, "Contains a NUL character; hidden test files are text.")
        elif len(text.encode("utf-8", "surrogatepass")) > limit:
            note(key, f"Too large: the limit for a hidden test file is {limit} bytes.")
        else:
            hidden[path] = text
    return hidden


def _setup_commands(value: Any, note: Report) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        note("repository.setup_commands", f"Expected a list of shell command strings, got {_type(value)}.")
        return []
    if len(value) > MAX_SETUP_COMMANDS:
        note("repository.setup_commands", f"Too many commands: {len(value)}, the limit is {MAX_SETUP_COMMANDS}.")
        return []
    commands = []
    for index, command in enumerate(value):
        key = f"repository.setup_commands[{index}]"
        if not isinstance(command, str) or not command.strip():
            note(key, "Expected a non-blank shell command string.")
        elif "\x00" in command or len(command.encode("utf-8", "surrogatepass")) > MAX_SETUP_COMMAND_BYTES:
            note(key, f"A command has no NUL and at most {MAX_SETUP_COMMAND_BYTES} bytes.")
        else:
            commands.append(command.strip())
    return commands


def node_id_problem(node: Any, known: set[str]) -> str | None:
    """Why `node` is not a pytest node id `path/to/test_x.py::name[::name...]` of a known file."""
    if not isinstance(node, str):
        return f"Expected a node id string, got {_type(node)}."
    if len(node) > MAX_NODE_ID_CHARS:
        return f"Longer than {MAX_NODE_ID_CHARS} characters."
    path, sep, rest = node.partition("::")
    if not sep or not rest:
        return f"{node!r} is not a node id: expected 'path/to/test_file.py::test_name'."
    try:
        normal = normalise_path(path)
    except BadPath as exc:
        return f"{node!r}: {exc}"
    if normal != path or not path.endswith(".py"):
        return f"{node!r}: the part before '::' must be a normalised path to a .py file."
    names = rest.split("::")
    if any(not n.strip() or any(ord(ch) < 0x20 for ch in n) for n in names):
        return f"{node!r}: every name after '::' must be non-blank, without control characters."
    if path not in known:
        return f"{node!r}: no file {path!r} in the tree or the hidden test files."
    return None


def _node_ids(value: Any, name: str, known: set[str], note: Report, *, required: bool) -> list[str]:
    key = f"repository.{name}"
    if value is None:
        value = []
    if not isinstance(value, list):
        note(key, f"Expected a list of pytest node ids, got {_type(value)}.")
        return []
    if required and not value:
        note(key, "At least one test is required: the tests that fail before the fix and pass after it.")
    if len(value) > MAX_NODE_IDS:
        note(key, f"Too many node ids: {len(value)}, the limit is {MAX_NODE_IDS}.")
        return []
    seen: set[str] = set()
    for index, node in enumerate(value):
        problem = node_id_problem(node, known)
        if problem:
            note(f"{key}[{index}]", problem)
        elif node in seen:
            note(f"{key}[{index}]", f"Duplicate node id {node!r}.")
        else:
            seen.add(node)
    return sorted(seen)


def _protected(value: Any, note: Report) -> tuple[str, ...]:
    if value is None or value == []:
        return tuple(sorted(DEFAULT_PROTECTED_PATHS))
    if not isinstance(value, list):
        note("repository.protected_paths", f"Expected a list of glob patterns, got {_type(value)}.")
        return ()
    if len(value) > MAX_PROTECTED_PATTERNS:
        note("repository.protected_paths", f"At most {MAX_PROTECTED_PATTERNS} patterns.")
        return ()
    patterns: set[str] = set()
    for index, raw in enumerate(value):
        try:
            patterns.add(check_pattern(raw))
        except BadPath as exc:
            note(f"repository.protected_paths[{index}]", str(exc))
    return tuple(sorted(patterns))


def check_patches(repo: RepositoryContent, patches: list[tuple[str, str, str]], report: Report) -> None:
    """Each (field path, role, diff) must apply to the tree with `git apply`; a reference
    must leave protected paths alone, since the verdict restores them before judging."""
    if not patches:
        return
    checks: list[PatchCheck] = patches_check(repo.tree_files(), [diff for _, _, diff in patches])
    for (key, role, _), check in zip(patches, checks, strict=True):
        if not check.applies:
            report(key, f"The patch does not apply to the tree with `git apply`: {check.message}")
            continue
        touched = sorted(p for p in check.paths if is_protected(p, repo.protected_paths))
        if role == "reference" and touched:
            report(
                key,
                f"The reference patch changes protected path(s) {', '.join(touched)}; the verdict restores "
                "protected paths, so the fix would be judged without that change.",
            )

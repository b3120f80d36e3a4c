"""The common samples format: one JSON object per line, `task_id` and `completion`,
optionally `solver` and `sample_id` (as written by HumanEval's and EvalPlus's
generation scripts, and by most RL rollout dumps).

A file is read whole and checked before anything is stored: one bad line rejects
the file, and the error names its line and what is wrong with it.

The code to run is taken from the completion: the first fenced block when there
is one (```python ... ``` or a bare ```), else the completion as it is. A
completion that does not define the task's entry point at top level is a body
that continues the task's prompt (HumanEval's convention), so the prompt goes in
front of it; `with_prompt` does that once the task is known.
"""

from __future__ import annotations

import ast
import gzip
import io
import json
import re
from dataclasses import dataclass
from typing import Any, BinaryIO

MAX_LINE_BYTES = 1_000_000
MAX_LINES = 200_000
_FENCE = "```"


class SamplesError(ValueError):
    """The file cannot be ingested; `line` is 1-based, 0 for the file as a whole."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line
        self.reason = message


@dataclass(frozen=True)
class Sample:
    line: int
    task_id: str
    completion: str
    solver: str | None
    sample_id: str


def solver_name_ok(name: str) -> bool:
    """A name that prints as itself: no control characters (newlines, escapes, NUL)."""
    return all(ch.isprintable() for ch in name)


def extract_code(completion: str) -> str:
    """The first fenced code block of a Markdown answer, or the text as it is."""
    start = completion.find(_FENCE)
    if start < 0:
        return completion
    newline = completion.find("\n", start)
    if newline < 0:
        return completion  # a fence with nothing after it: not a code block
    end = completion.find(_FENCE, newline + 1)
    body = completion[newline + 1 : end if end >= 0 else len(completion)]
    return body if body.strip() else completion


# Code whose first statement is indented: a body, whatever follows (blank and comment lines skipped).
_OPENS_INDENTED = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\r?\n)*[ \t]+[^\s#]")


def _defines(code: str, name: str) -> bool:
    """Whether `code` defines `name` (def, async def or class) at top level."""
    # A top-level definition starts a line with def/async def/class NAME: without one
    # the answer is no, and most bodies are told so without parsing.
    match = re.search(rf"^(?:async[ \t]+def|def|class)[ \t]+{re.escape(name)}\b", code, re.MULTILINE)
    if match is None:
        return False
    # Such a line is a definition unless a string literal spans it, which only a triple
    # quote or a backslash-continued line before it can open; and unless the code opens
    # indented (a body that defines the name again further down). Otherwise it needs
    # no parse: ast.parse cost ~0.13 ms a completion, the largest part of the reward
    # API's own work on a request. (Code that does not parse anyway keeps its error:
    # it is an error with the prompt in front of it too, only its line numbers differ.)
    head = code[: match.start()]
    spans_none = '"""' not in head and "'''" not in head and "\\\n" not in head and "\\\r\n" not in head
    if spans_none and not _OPENS_INDENTED.match(code):
        return True
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name
        for node in tree.body
    )


def with_prompt(code: str, *, prompt: str, entry_point: str, language: str = "python") -> str:
    """`code` as a whole program: behind the task's prompt when it is only a body (a
    Python body, HumanEval's way; another language's completion is taken whole)."""
    if language != "python" or not entry_point or not prompt or _defines(code, entry_point):
        return code
    return prompt + code if prompt.endswith("\n") or code.startswith("\n") else prompt + "\n" + code


def _text_lines(raw: bytes) -> list[str]:
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise SamplesError(0, f"the file looks gzipped but does not decompress: {exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SamplesError(line, "not UTF-8 text") from None
    return text.splitlines()


def _string(obj: dict[str, Any], name: str, number: int, *, required: bool) -> str | None:
    value = obj.get(name)
    if value is None:
        if required:
            raise SamplesError(number, f"`{name}` is missing")
        return None
    if isinstance(value, int) and not isinstance(value, bool) and name in ("task_id", "sample_id"):
        return str(value)  # MBPP's task ids and many sample ids are numbers
    if not isinstance(value, str):
        raise SamplesError(number, f"`{name}` must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise SamplesError(number, f"`{name}` is empty")
    return value


def parse_samples(handle: BinaryIO | bytes) -> list[Sample]:
    """Every sample of a JSONL (or gzipped JSONL) file, or SamplesError for the first bad line.

    Blank lines are skipped. Without `sample_id`, a sample is named by its position
    among the samples of its task and solver in the file (0, 1, ...), so uploading
    the same file again names every sample the same way."""
    raw = handle if isinstance(handle, bytes) else handle.read()
    if not raw.strip():
        raise SamplesError(0, "the file is empty")
    lines = _text_lines(raw)
    if len(lines) > MAX_LINES:
        raise SamplesError(0, f"the file has {len(lines)} lines; at most {MAX_LINES} per upload")
    samples: list[Sample] = []
    seen: dict[tuple[str, str | None], int] = {}
    named: set[tuple[str, str | None, str]] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if len(line.encode("utf-8")) > MAX_LINE_BYTES:
            raise SamplesError(number, f"longer than {MAX_LINE_BYTES} bytes")
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SamplesError(number, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise SamplesError(number, f"expected a JSON object, got {type(obj).__name__}")
        task_id = _string(obj, "task_id", number, required=True)
        completion = _string(obj, "completion", number, required=False)
        if completion is None:
            raise SamplesError(number, "`completion` is missing")
        solver = _string(obj, "solver", number, required=False)
        solver = solver.strip() or None if solver is not None else None
        if solver is not None and not solver_name_ok(solver):
            raise SamplesError(number, "`solver` has control characters; use a plain name like policy-400")
        sample_id = _string(obj, "sample_id", number, required=False)
        position = seen.get((task_id, solver), 0)
        seen[(task_id, solver)] = position + 1
        sample_id = sample_id if sample_id is not None else str(position)
        if (task_id, solver, sample_id) in named:
            raise SamplesError(number, f"sample_id {sample_id!r} repeats for task {task_id!r}")
        named.add((task_id, solver, sample_id))
        samples.append(Sample(number, task_id.strip(), completion, solver, sample_id))
    return samples


def samples_from_text(text: str) -> list[Sample]:
    return parse_samples(io.BytesIO(text.encode("utf-8")))

"""Exploit probes: generic reward-hacking attempts, adapted to one task.

Each probe is a candidate solution that tries to earn the reward without
solving the task: exit before the tests, return an object that equals
anything, skip the tests, forge pytest's report, plant interpreter hooks,
print a fake summary, read the tests, fish expected values out of frames or
the heap, hard-code the visible examples, stall, patch builtins, shadow the
names a test's helpers use, or kill the judge. A probe that passes on a task
is a reward hack that works there: the verification pipeline flags the task.

The probes' code is data for the sandbox, never for this process: it is only
ever run through `evaluation.sandbox.engine.run`. The generated code uses the
standard library only (the sandbox holds nothing else but pytest), runs under
`python -S` (so no `site` helpers such as `exit`), and takes every value that
comes from a task through `repr()`; the entry point, the one name spliced in
raw, must be a plain identifier.

The package, one module per family of hacks:
- call_hacks: modules for the kinds that call a function (templates/call/);
- stdio_hacks: programs for the stdio kind (templates/stdio/);
- function_hacks: functions in any language for the function_calls kind;
- file_hacks: files planted for what runs later, shared by both (templates/files/);
- helper_hacks: rewrites of the helpers the starter code gives;
- repository_hacks: edits of a repository task's tree that tamper with its tests;
- examples: what a task shows a solver (its visible examples and cases);
- render: the Probe record and the rendering of the template files.
"""

from __future__ import annotations

import keyword

from evaluation.verification.probes.call_hacks import call_probes
from evaluation.verification.probes.constants import (
    CANDIDATE_NAME,
    FAKE_PASS_OUTPUT,
    SLEEP_S,
    SUITE_KINDS,
    TIMEOUT_PROBES,
)
from evaluation.verification.probes.examples import visible_examples, visible_io
from evaluation.verification.probes.function_hacks import function_probes
from evaluation.verification.probes.helper_hacks import given_helpers, helper_probes
from evaluation.verification.probes.language_hacks import language_probes
from evaluation.verification.probes.render import Probe
from evaluation.verification.probes.repository_hacks import RepositoryProbe, repository_probes
from evaluation.verification.probes.stdio_hacks import STDIO_INAPPLICABLE, stdio_probes

__all__ = [
    "CANDIDATE_NAME",
    "FAKE_PASS_OUTPUT",
    "SLEEP_S",
    "STDIO_INAPPLICABLE",
    "SUITE_KINDS",
    "TIMEOUT_PROBES",
    "Probe",
    "RepositoryProbe",
    "given_helpers",
    "probes_for",
    "repository_probes",
    "visible_examples",
    "visible_io",
]


def probes_for(
    *,
    suite_kind: str,
    entry_point: str,
    visible_tests: list,
    statement: str = "",
    starter_code: str = "",
    language: str = "python",
    signature: dict | None = None,
) -> list[Probe]:
    """The exploit probes for a task: programs for stdio (in the task's language),
    functions of its signature for function_calls (any language), modules defining
    `entry_point` otherwise."""
    if suite_kind not in SUITE_KINDS:
        raise ValueError(f"unknown suite kind {suite_kind!r}: use one of {', '.join(SUITE_KINDS)}")
    if suite_kind == "function_calls":
        if not (signature or {}).get("returns"):
            raise ValueError("a function_calls task's probes are written to its signature: pass signature=")
        visible = list(visible_tests or [])
        found = function_probes(language, entry_point, signature or {}, visible)
        if language == "python":  # the interpreter's own hacks: always-equal objects, frame walks, ...
            examples = [(tuple(t["args"]), {}, t["expected"]) for t in visible if isinstance(t, dict)]
            found += [p for p in call_probes(entry_point, examples) if p.name not in {f.name for f in found}]
        return found
    if language != "python":
        # Another language's task is a program read from stdin: probed in its own idiom.
        return language_probes(language, visible_io(list(visible_tests or []))) if suite_kind == "stdio" else []
    if suite_kind == "stdio":
        return stdio_probes(visible_io(list(visible_tests or [])))
    if not entry_point.isidentifier() or keyword.iskeyword(entry_point):
        raise ValueError(f"entry point {entry_point!r} is not a Python identifier")
    examples = visible_examples(
        suite_kind=suite_kind, entry_point=entry_point, visible_tests=list(visible_tests or []), statement=statement
    )
    return call_probes(entry_point, examples) + helper_probes(entry_point, given_helpers(starter_code, entry_point))

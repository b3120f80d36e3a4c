"""Synthesis: repository tasks made from a project with a green test suite, by mutants.

What SWE-smith does with scripts written per repository, done with the platform's own
parts: the mutation engine (verification/mutants) breaks one function at a time, the
session engine (sandbox/sessions) runs the suite against each break, and the tasks
come out through tasks_app's services or as native JSONL.

Why it lives in `verification`: it is the mutation engine turned around. Verification
uses mutants to measure how much a task's tests pin down; synthesis uses the same
mutants and the same kill decision (a mutant some test notices) to make the task.
It needs both rooms below `difficulty`, the mutants here and the sandbox below, and
nothing of `difficulty`, so this room is the lowest one that can hold it.

- `sources`: the project's files, from a folder, an sdist or PyPI, within the caps;
- `suite`: the suite run in one session sandbox, outcomes parsed per node id;
- `candidates`: package modules, their functions, and each function's mutants;
- `drafts`: a killed mutant as a task draft (reverse patch, statement);
- `service`: `repository_tasks_synthesize` and the two ways to write its drafts.
"""

from evaluation.verification.synthesis.drafts import TaskDraft
from evaluation.verification.synthesis.service import (
    SynthesisCounts,
    SynthesisResult,
    repository_tasks_synthesize,
    source_tree_read,
    synthesized_tasks_create,
    synthesized_tasks_write,
)
from evaluation.verification.synthesis.sources import SourceTree, SynthesisRefused

__all__ = [
    "SourceTree",
    "SynthesisCounts",
    "SynthesisRefused",
    "SynthesisResult",
    "TaskDraft",
    "repository_tasks_synthesize",
    "source_tree_read",
    "synthesized_tasks_create",
    "synthesized_tasks_write",
]

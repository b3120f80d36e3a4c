"""The executions of a repository version's verification, each a patch:

- `reference`: every reference patch, R times; must pass every test;
- `adversarial`: every adversarial patch, R times, and the empty patch (no change at
  all), R times: a fail-to-pass test that passes without a fix is no test of it;
- `probe`: patches that tamper with the tests instead of fixing the code
  (probes/repository_hacks.py); none may pass;
- `mutant`: the first reference with one function it changes mutated
  (mutants/, kept inside the changed functions' lines); each should fail.

Items have the shape the program kinds' planning makes (planning._planned), so keys,
rows and figures are the same machinery.
"""

from __future__ import annotations

import logging
import random
from itertools import zip_longest
from typing import Any

from evaluation.verification import mutants, probes
from evaluation.verification.config import VerifyConfig
from evaluation.verification.repository.changes import changed_lines, changed_ranges
from evaluation.verification.repository.scratch import PatchRefused, ScratchRepository
from evaluation.verification.sessions.specs import environment_files, repository_of
from tasks_app.models import Solution, TaskVersion

log = logging.getLogger(__name__)

EMPTY_PATCH = "empty patch"


def _item(role: str, subject: str, description: str, code: str, repeat: int = 0) -> dict[str, Any]:
    return {"role": role, "subject": subject[:200], "description": description[:300], "code": code,
            "repeat": repeat, "seed": repeat}  # fmt: skip


def repository_items(version: TaskVersion, config: VerifyConfig) -> list[dict[str, Any]]:
    """Every execution the configuration asks for, in a stable order."""
    solutions = list(version.solutions.all().order_by("role", "label"))
    items = [_item(s.role, s.label, s.note, s.code, repeat) for s in solutions for repeat in range(config.repeats)]
    empty = EMPTY_PATCH if EMPTY_PATCH not in {s.label for s in solutions} else f"{EMPTY_PATCH} (generated)"
    items += [
        _item("adversarial", empty, "No change at all: a fail-to-pass test that passes without a fix tests nothing.",
              "", repeat)
        for repeat in range(config.repeats)
    ]  # fmt: skip
    references = [s for s in solutions if s.role == "reference"]
    if not (config.probes or (references and config.mutants)):
        return items
    with ScratchRepository(environment_files(version)) as scratch:
        if config.probes:
            items += _probe_items(version, scratch, references[0] if references else None)
        if references and config.mutants:
            items += _mutant_items(scratch, references[0], config)
    return items


def _import_targets(scratch: ScratchRepository, reference: Solution | None) -> list[str]:
    """The modules tests import on their way to what the reference changes: each changed
    file's top-level package (its __init__.py), or the file itself at the top level."""
    if reference is None:
        return []
    scratch.reset()
    try:
        scratch.apply(reference.code)
    except PatchRefused:
        return []
    changed = [path for path in scratch.changed_paths() if path.endswith(".py")]
    scratch.reset()
    targets: list[str] = []
    for path in changed:
        top = path.split("/", 1)[0]
        if "/" not in path:
            targets.append(path)
        elif scratch.read(f"{top}/__init__.py") is not None:
            targets.append(f"{top}/__init__.py")
    return [t for t in dict.fromkeys(targets) if not t.startswith(("tests/", "test/")) and scratch.read(t) is not None]


def _text(scratch: ScratchRepository, path: str) -> str | None:
    data = scratch.read(path)
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _probe_items(version: TaskVersion, scratch: ScratchRepository, reference: Solution | None) -> list[dict[str, Any]]:
    repository = repository_of(version)
    found = probes.repository_probes(
        fail_to_pass=list(repository["fail_to_pass"]),
        pass_to_pass=list(repository["pass_to_pass"]),
        tree_paths=set(repository["manifest"]),
        import_targets=_import_targets(scratch, reference),
        read=lambda path: _text(scratch, path),
    )
    items = []
    for probe in found:
        scratch.reset()
        for path, text in probe.edits.items():
            scratch.write(path, None if text is None else text.encode("utf-8"))
        try:
            patch = scratch.patch()
        except ValueError:  # a changed file that is no UTF-8 text: no patch to send as text
            continue
        if patch:
            items.append(_item("probe", probe.name, probe.description, patch))
    scratch.reset()
    return items


def _mutant_items(scratch: ScratchRepository, reference: Solution, config: VerifyConfig) -> list[dict[str, Any]]:
    """Mutants of the functions the reference changes, each as the reference's patch with
    that one file mutated. Files take turns (in an order the mutation seed shuffles), so a
    small limit still spreads over every changed file."""
    scratch.reset()
    try:
        scratch.apply(reference.code)
    except PatchRefused as exc:  # validated on upload; a reference that no longer applies fails its own runs
        log.warning("the reference of a repository version does not apply, so no mutants: %s", exc)
        return []
    per_file: list[list[tuple[str, str, mutants.Mutant]]] = []
    for path in sorted(p for p in scratch.changed_paths() if p.endswith(".py")):
        source = _text(scratch, path)
        ranges = changed_ranges(source, changed_lines(scratch.hunks(path))) if source is not None else []
        if not ranges:
            continue
        try:
            made = mutants.generate_mutants(source, seed=config.mutation_seed, limit=config.mutants, within=ranges)
        except ValueError:  # the patched file does not parse: nothing to mutate
            continue
        per_file.append([(path, source, mutant) for mutant in made])
    random.Random(config.mutation_seed).shuffle(per_file)  # noqa: S311 - reproducible order, not cryptography
    chosen = [entry for row in zip_longest(*per_file) for entry in row if entry is not None][: config.mutants]
    items = []
    for path, source, mutant in chosen:
        scratch.write(path, mutant.source.encode("utf-8"))
        patch = scratch.patch()
        scratch.write(path, source.encode("utf-8"))
        items.append(_item("mutant", mutant.digest, f"{path} {mutant.description}", patch))
    scratch.reset()
    return items

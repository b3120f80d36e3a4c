"""`repository_tasks_synthesize`: a project with a green suite in, repository task drafts out.

Steps, in order:
1. Refuse what is not a Python project with tests (no package module, no test file).
2. Run the suite once in a session sandbox and require it green, naming the tests
   that fail otherwise: a task's PASS_TO_PASS must pass on the original.
3. For each function of the package's modules (not the tests), pick mutants with the
   mutation engine (candidates.py), the functions interleaved.
4. Run the suite once per mutant, the mutated file written into the same sandbox.
   A mutant no test notices survives and is counted; one that runs past the time
   limit is counted and dropped (a task whose broken tree hangs makes a slow verdict).
5. A killed mutant becomes a draft: the mutated tree, the reverse patch (checked with
   `git apply --check`), the broken tests as FAIL_TO_PASS, the rest as PASS_TO_PASS,
   optionally the broken tests' files held out as hidden tests. Identical mutated
   trees are made into one task.
Writing the drafts (as tasks in draft, or as native JSONL) is a separate step, so a
dry look at what a project yields costs no rows.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from evaluation.verification.synthesis.candidates import (
    Candidate,
    interleave,
    is_package_module,
    is_test_file,
    module_candidates,
)
from evaluation.verification.synthesis.drafts import TaskDraft, reverse_patch, slug_for, statement_draft
from evaluation.verification.synthesis.sources import (
    SourceTree,
    SynthesisRefused,
    sdist_from_pypi,
    tree_from_folder,
    tree_from_sdist,
)
from evaluation.verification.synthesis.suite import SuiteRun, SuiteRunner
from tasks_app.content import VersionContent
from tasks_app.importers.native import native_line
from tasks_app.models import Task
from tasks_app.repository.patches import TreeFile, patches_check
from tasks_app.services import task_create

MAX_LISTED_FAILURES = 20
Progress = Callable[[str], None]


@dataclass
class SynthesisCounts:
    functions: int = 0
    mutants: int = 0  # run against the suite
    killed: int = 0
    survived: int = 0
    timed_out: int = 0
    duplicates: int = 0
    tasks: int = 0

    def line(self) -> str:
        return (f"functions {self.functions}, mutants {self.mutants}, killed {self.killed}, "
                f"survived {self.survived}, timed out {self.timed_out}, duplicates {self.duplicates}, "
                f"tasks {self.tasks}")  # fmt: skip


@dataclass
class SynthesisResult:
    project: str
    tests: int  # tests that pass on the original
    counts: SynthesisCounts
    drafts: list[TaskDraft] = field(default_factory=list)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)
    sandbox_steps: int = 0


def source_tree_read(*, path: str | None = None, sdist: str | None = None, pypi: str | None = None) -> SourceTree:
    """The project from exactly one of a folder, a local sdist, or a PyPI requirement."""
    if sum(value is not None for value in (path, sdist, pypi)) != 1:
        raise SynthesisRefused("Give exactly one of --path DIR, --sdist FILE or --pypi NAME[==VERSION].")
    if path is not None:
        return tree_from_folder(path)
    if sdist is not None:
        return tree_from_sdist(sdist)
    with tempfile.TemporaryDirectory(prefix="synthesis-sdist-") as scratch:
        return tree_from_sdist(sdist_from_pypi(pypi or "", Path(scratch)))


def _require_python_project(tree: SourceTree) -> tuple[list[str], list[str]]:
    modules = sorted(p for p in tree.files if is_package_module(p))
    tests = sorted(p for p in tree.files if is_test_file(p))
    if not modules:
        raise SynthesisRefused(f"{tree.name} is not a Python project: no .py module outside the tests.")
    if not tests:
        raise SynthesisRefused(f"{tree.name} has no test files (test_*.py or *_test.py): synthesis needs a suite.")
    return modules, tests


def _require_green(tree: SourceTree, baseline: SuiteRun) -> set[str]:
    failing = baseline.not_passed
    if failing:
        listed = [f"{node}: {baseline.messages.get(node, '')}".rstrip(": ") for node in failing[:MAX_LISTED_FAILURES]]
        more = f" (and {len(failing) - MAX_LISTED_FAILURES} more)" if len(failing) > MAX_LISTED_FAILURES else ""
        raise SynthesisRefused(
            f"The test suite of {tree.name} is not green: {len(failing)} test(s) fail{more}; fix or remove them "
            "first.\n" + "\n".join(f"  {line}" for line in listed)
        )
    if baseline.timed_out:
        raise SynthesisRefused(f"The test suite of {tree.name} ran past its time limit.")
    passed = {node for node in baseline.passed if "::" in node}
    if baseline.exit_code != 0 or not passed:
        why = f"pytest exited {baseline.exit_code}" if passed else "pytest collected no tests"
        raise SynthesisRefused(f"The test suite of {tree.name} did not run green ({why}):\n{baseline.output[-3000:]}")
    return passed


def repository_tasks_synthesize(
    *,
    tree: SourceTree,
    cache_root: Path | None = None,
    max_tasks: int = 50,
    max_mutants_per_function: int = 3,
    seed: int = 0,
    hide_failing_tests: bool = False,
    progress: Progress | None = None,
) -> SynthesisResult:
    """Task drafts from the killed mutants of `tree`'s functions (the steps are in the module's docstring)."""
    say = progress or (lambda _line: None)
    modules, _tests = _require_python_project(tree)
    root = cache_root or Path(settings.SESSIONS["ENVIRONMENTS_DIR"])
    counts = SynthesisCounts()
    candidates: list[Candidate] = []
    for path in modules:
        try:
            source = tree.files[path][0].decode("utf-8")
        except UnicodeDecodeError:
            continue
        functions, chosen = module_candidates(path, source, per_function=max_mutants_per_function, seed=seed)
        counts.functions += functions
        candidates.extend(chosen)
    result = SynthesisResult(project=tree.name, tests=0, counts=counts, skipped_files=list(tree.skipped))
    with SuiteRunner(tree.files, cache_root=root) as runner:
        baseline = runner.run()
        passed = _require_green(tree, baseline)
        result.tests = len(passed)
        say(f"{tree.name}: the suite is green ({len(passed)} tests); {len(candidates)} mutants to run")
        timeout = max(10.0, 5 * baseline.elapsed_s + 5)
        seen: set[tuple[str, str]] = set()
        for candidate in interleave(candidates):
            if counts.tasks >= max_tasks:
                break
            key = (candidate.path, hashlib.sha256(candidate.mutant.source.encode()).hexdigest())
            if key in seen:
                counts.duplicates += 1
                continue
            seen.add(key)
            counts.mutants += 1
            run = runner.run({candidate.path: candidate.mutant.source}, timeout_s=timeout)
            if run.timed_out:
                counts.timed_out += 1
                continue
            broken = passed - run.passed
            if not broken:
                counts.survived += 1
                continue
            counts.killed += 1
            draft = _draft(tree, candidate, broken, passed - broken, run, hide=hide_failing_tests)
            if draft is not None:
                result.drafts.append(draft)
                counts.tasks += 1
                say(f"  task {draft.slug}: {candidate.mutant.description} breaks {len(broken)} test(s)")
        result.sandbox_steps = runner.steps
    return result


def _draft(tree: SourceTree, candidate: Candidate, broken: set[str], kept: set[str], run: SuiteRun,
           *, hide: bool) -> TaskDraft | None:  # fmt: skip
    path, mutant = candidate.path, candidate.mutant
    original_bytes, executable = tree.files[path]
    files = {**tree.files, path: (mutant.source.encode("utf-8"), executable)}
    hidden: dict[str, str] = {}
    if hide:
        for test_path in sorted({node.split("::", 1)[0] for node in broken}):
            if test_path in files:
                hidden[test_path] = files.pop(test_path)[0].decode("utf-8", "replace")
    patch = reverse_patch(path, mutant.source, original_bytes.decode("utf-8"))
    check = patches_check({p: TreeFile(d, x) for p, (d, x) in files.items()}, [patch])[0]
    if not check.applies:
        return None
    module = path.rsplit("/", 1)[-1].removesuffix(".py")
    slug = slug_for(tree.name, module, candidate.function, mutant.digest[:6])
    failing = {node: run.messages.get(node, "") for node in broken}
    return TaskDraft(
        slug=slug,
        title=f"{tree.name}: {candidate.function} in {path} misbehaves",
        tags=sorted({"repository", "synthesized", slug_for(tree.name)}),
        statement=statement_draft(
            project=tree.name, path=path, function=candidate.function, failing=failing, hidden=set(hidden)
        ),
        files=files,
        fail_to_pass=sorted(broken),
        pass_to_pass=sorted(kept),
        reference_patch=patch,
        path=path,
        function=candidate.function,
        mutation=mutant.description,
        hidden_test_files=hidden,
    )


@dataclass
class WriteReport:
    created: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)


@transaction.atomic
def synthesized_tasks_create(*, actor: Any, drafts: Iterable[TaskDraft]) -> WriteReport:
    """Each draft as a new task in draft state; a slug already taken is left alone and listed.
    Every draft is validated first, so one bad draft writes nothing."""
    drafts = list(drafts)
    contents = {draft.slug: VersionContent.parse(draft.content_data(), prefix=f"{draft.slug}.") for draft in drafts}
    taken = set(Task.objects.filter(slug__in=contents).values_list("slug", flat=True))
    report = WriteReport()
    for draft in drafts:
        if draft.slug in taken:
            report.existing.append(draft.slug)
            continue
        task_create(actor=actor, slug=draft.slug, title=draft.title, content=contents[draft.slug], tags=draft.tags,
                    changelog=f"Synthesized from a mutant of {draft.function} ({draft.path}).")  # fmt: skip
        report.created.append(draft.slug)
    return report


def synthesized_tasks_write(*, out: Path, drafts: Iterable[TaskDraft]) -> int:
    """The drafts as native JSONL (what `import_tasks` reads), each with its content hash."""
    lines = []
    for draft in drafts:
        obj = draft.native_object()
        obj["content_hash"] = VersionContent.parse(obj["version"], prefix=f"{draft.slug}.").content_hash()
        lines.append(native_line(obj))
    out.write_text("".join(lines), encoding="utf-8")
    return len(lines)

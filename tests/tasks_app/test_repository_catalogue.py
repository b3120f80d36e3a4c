"""The repository part of the sample catalogue: its shape, its trees against the projects
they came from, idempotent loading, and every task played in the session engine."""

from __future__ import annotations

import subprocess
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from tasks_app.catalogue import catalogue_load
from tasks_app.catalogue.repository_entries import APPROVED_SEEDS, PROJECTS_DIR, repository_entries
from tasks_app.models import State, Task, TaskVersion
from tests.repository_episodes import play, prepare, scratch_cache, verdict_spec

ENTRIES = repository_entries()
BY_SLUG = {entry.slug: entry for entry in ENTRIES}
SLUGS = list(BY_SLUG)
DRAFT_MARK = "Drafted by `synthesize_repository_tasks`"


def repository(slug: str) -> dict:
    return BY_SLUG[slug].data["repository"]


def tree_of(slug: str) -> dict[str, tuple[bytes, bool]]:
    files = {}
    for path, raw in repository(slug)["files"].items():
        text = raw if isinstance(raw, str) else raw["text"]
        files[path] = (text.encode(), isinstance(raw, dict) and raw.get("executable", False))
    return files


def patches(slug: str, role: str) -> list[str]:
    return [s["code"] for s in BY_SLUG[slug].data["solutions"] if s["role"] == role]


def project_files(project: str) -> dict[str, bytes]:
    root = PROJECTS_DIR / project
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
            and "__pycache__" not in p.parts}  # fmt: skip


# -- shape ----------------------------------------------------------------------------------------


def test_at_least_20_tasks_over_at_least_4_projects_with_5_each():
    projects = Counter(entry.area for entry in ENTRIES)
    assert len(ENTRIES) >= 20 and len(projects) >= 4
    assert all(count >= 5 for count in projects.values()), projects
    assert all((PROJECTS_DIR / project).is_dir() for project in projects)


@pytest.mark.parametrize("slug", SLUGS)
def test_every_task_parses_and_is_curated(slug):
    entry = BY_SLUG[slug]
    content = entry.content  # VersionContent.parse: git apply --check of every patch included
    assert content.suite_kind == "repository"
    assert entry.seed_state == (State.APPROVED if slug in APPROVED_SEEDS else State.SUBMITTED)
    assert DRAFT_MARK not in content.statement and content.statement.startswith("# ")
    assert [s.role for s in content.solutions].count("reference") == 1
    assert all(s.note.strip() for s in content.solutions)
    assert content.repository.fail_to_pass


def test_some_tasks_hide_their_failing_tests_and_some_carry_an_adversarial_patch():
    hidden = [slug for slug in SLUGS if repository(slug)["hidden_test_files"]]
    adversarial = [slug for slug in SLUGS if patches(slug, "adversarial")]
    assert len(hidden) >= 4 and len(adversarial) >= 4
    assert set(adversarial) <= set(hidden), "an adversarial patch here is caught by hidden tests only"


@pytest.mark.parametrize("slug", SLUGS)
def test_each_tree_is_its_project_with_one_module_changed_and_hidden_tests_taken_out(slug):
    """The stored trees must not drift from the projects they were made from."""
    entry = BY_SLUG[slug]
    project = project_files(entry.area)
    tree = {path: data for path, (data, _) in tree_of(slug).items()}
    hidden = repository(slug)["hidden_test_files"]
    assert set(tree) | set(hidden) == set(project)
    changed = [path for path in tree if tree[path] != project[path]]
    assert len(changed) == 1 and changed[0].endswith(".py") and not changed[0].startswith("tests/")
    assert all(project[path] == text.encode() for path, text in hidden.items())
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for path, data in tree.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)
        subprocess.run(["git", "apply", "-"], cwd=root, input=patches(slug, "reference")[0].encode(), check=True)
        assert (root / changed[0]).read_bytes() == project[changed[0]], "the reference restores the project's code"


# -- loading --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_loading_twice_gives_the_same_rows(curator, reviewer):
    first = catalogue_load(owner=curator, reviewer=reviewer, entries=ENTRIES, label="repository catalogue")
    rows = sorted(TaskVersion.objects.values_list("task__slug", "number", "content_hash"))
    again = catalogue_load(owner=curator, reviewer=reviewer, entries=repository_entries(), label="repository catalogue")
    assert sorted(TaskVersion.objects.values_list("task__slug", "number", "content_hash")) == rows
    assert (len(first.created), len(again.unchanged), again.created, again.updated) == (len(ENTRIES),) * 2 + ([], [])
    assert again.summary() == f"repository catalogue: 0 created, 0 updated, {len(ENTRIES)} unchanged"
    states = dict(Task.objects.values_list("slug", "state"))
    assert {slug for slug, state in states.items() if state == State.APPROVED} == APPROVED_SEEDS
    assert {state for slug, state in states.items() if slug not in APPROVED_SEEDS} == {State.SUBMITTED}
    assert len({slug.split("-")[0] for slug in APPROVED_SEEDS}) == 4  # one a project, for the agentic demo
    assert {v.suite_kind for v in TaskVersion.objects.all()} == {"repository"}


# -- every task in the session engine -------------------------------------------------------------


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, float | None]]:
    """Each task's reference, empty patch and adversarial patches, played as episodes (an
    environment per task tree, episodes run four at a time)."""

    def judge(slug: str, cache) -> dict[str, float | None]:
        environment = prepare(cache, tree_of(slug))
        spec = verdict_spec(repository(slug))
        rewards = {"reference": play(environment, spec, patches(slug, "reference")[0]).reward,
                   "empty": play(environment, spec, None).reward}  # fmt: skip
        hidden = repository(slug)["hidden_test_files"]
        visible = [node for node in spec.pass_to_pass if node.split("::")[0] not in hidden]
        for index, patch in enumerate(patches(slug, "adversarial")):
            rewards[f"adversarial-{index}"] = play(environment, spec, patch).reward
            # The trap: what the agent can run says the adversarial patch is fine.
            visible_spec = replace(spec, fail_to_pass=tuple(visible), pass_to_pass=(), hidden={})
            rewards[f"visible-{index}"] = play(environment, visible_spec, patch).reward
        return rewards

    with scratch_cache() as cache, ThreadPoolExecutor(4) as workers:
        return dict(zip(SLUGS, workers.map(lambda slug: judge(slug, cache), SLUGS), strict=True))


@pytest.mark.bwrap
@pytest.mark.parametrize("slug", SLUGS)
def test_the_reference_passes_and_the_empty_patch_and_every_adversarial_fail(outcomes, slug):
    rewards = outcomes[slug]
    assert rewards["reference"] == 1.0, rewards
    assert rewards["empty"] == 0.0, rewards
    assert all(reward == 0.0 for label, reward in rewards.items() if label.startswith("adversarial")), rewards
    assert all(reward == 1.0 for label, reward in rewards.items() if label.startswith("visible")), rewards

"""The sample catalogue: its shape, its solutions against its own tests, and seed_demo."""

from __future__ import annotations

from collections import Counter
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from tasks_app.catalogue import catalogue_entries, catalogue_load
from tasks_app.catalogue.entries import CatalogueEntry
from tasks_app.catalogue.repository_entries import repository_entries
from tasks_app.content import PROGRAM_SUITE_KINDS, VersionContent
from tasks_app.errors import PermissionDenied
from tasks_app.models import State, Task, TaskVersion, Transition
from tasks_app.roles import ROLES
from tasks_app.services import task_retire
from tests import catalogue_runner
from tests.factories import UserFactory

ENTRIES = catalogue_entries()
SLUGS = [entry.slug for entry in ENTRIES]
BY_SLUG = {entry.slug: entry for entry in ENTRIES}
# seed_demo loads the repository tasks too (tasks_app/catalogue/repository_entries.py): submitted, four approved.
SEEDED = ENTRIES + repository_entries()
EXPECTED_AREAS = {"strings", "arithmetic", "data-structures", "parsing", "algorithms", "data-processing", "functions"}


# -- the catalogue's shape -------------------------------------------------------------


def test_the_catalogue_has_at_least_24_tasks_in_at_least_6_areas():
    assert len(ENTRIES) >= 24
    areas = Counter(entry.area for entry in ENTRIES)
    assert set(areas) >= EXPECTED_AREAS
    assert all(count >= 4 for count in areas.values()), areas


def test_every_suite_kind_is_used_at_least_5_times():
    kinds = Counter(entry.content.suite_kind for entry in ENTRIES)
    # Repository tasks run in agent sessions, not the program runner: their samples live apart.
    assert all(kinds[kind] >= 5 for kind in PROGRAM_SUITE_KINDS), kinds


def test_slugs_are_unique():
    assert len(SLUGS) == len(set(SLUGS))


@pytest.mark.parametrize("slug", SLUGS)
def test_every_entry_parses_with_version_content_parse(slug):
    content = VersionContent.parse(BY_SLUG[slug].data)
    assert content.content_hash() == BY_SLUG[slug].content.content_hash()


@pytest.mark.parametrize("slug", SLUGS)
def test_every_task_is_complete_and_within_the_limits(slug):
    entry = BY_SLUG[slug]
    content = entry.content
    roles = Counter(solution.role for solution in content.solutions)
    assert roles["reference"] == 1 and roles["adversarial"] >= 1
    assert all(s.note.strip() for s in content.solutions if s.role == "adversarial"), "say what is wrong"
    assert entry.tags[0] == entry.area and 2 <= len(entry.tags) <= 3
    assert "## Example" in content.statement and content.starter_code.strip()
    assert 1 <= len(content.visible_tests) <= 2
    assert 5 <= float(content.time_limit_s) <= 10 and 128 <= content.memory_limit_mb <= 256
    if content.suite_kind == "stdio":
        assert content.entry_point == "" and len(content.hidden_tests) >= 5
    else:
        assert content.entry_point
    if content.suite_kind == "assertions":
        assert len(content.hidden_tests) >= 5
        assert all(content.entry_point in test for test in content.hidden_tests)
    if content.suite_kind == "pytest":
        assert all(f"from solution import {content.entry_point}" in module for module in content.hidden_tests)
        assert sum(module.count("\ndef test_") for module in content.hidden_tests) >= 5
    if content.suite_kind == "check_function":
        assert sum(module.count("assert ") for module in content.hidden_tests) >= 5


def test_seed_states_put_a_task_in_every_column_of_the_board():
    states = Counter(entry.seed_state for entry in ENTRIES)
    assert set(states) == set(State.values)
    assert states[State.DRAFT] + states[State.SUBMITTED] > len(ENTRIES) / 2
    assert states[State.RETIRED] == 1


# -- the solutions against the catalogue's own tests ------------------------------------


@pytest.fixture(scope="module")
def verdicts() -> dict[str, catalogue_runner.TaskVerdict]:
    """Every solution of every task against its visible and hidden suites, run once, concurrently."""
    return catalogue_runner.verify((entry.slug, entry.content) for entry in ENTRIES)


@pytest.mark.parametrize("slug", SLUGS)
def test_every_reference_solution_passes_all_its_visible_and_hidden_tests(verdicts, slug):
    verdict = verdicts[slug]
    assert verdict.results, "nothing ran"
    assert verdict.reference_problems() == []


@pytest.mark.parametrize("slug", SLUGS)
def test_every_adversarial_solution_fails_at_least_one_hidden_test(verdicts, slug):
    assert verdicts[slug].uncaught_adversarials() == []


@pytest.mark.parametrize("slug", SLUGS)
def test_every_adversarial_solution_passes_the_visible_tests_so_only_the_hidden_suite_catches_it(verdicts, slug):
    assert verdicts[slug].adversarials_failing_visible() == []


@pytest.mark.parametrize("kind", PROGRAM_SUITE_KINDS)
def test_the_runner_fails_a_solution_that_exits_before_the_tests(kind):
    entry = next(e for e in ENTRIES if e.content.suite_kind == kind)
    content = entry.content
    reference = next(s.code for s in content.solutions if s.role == "reference")
    result = catalogue_runner.run_suite(content, "import sys\nsys.exit(0)\n" + reference, content.hidden_tests)
    assert not result.passed


# -- loading and seed_demo -----------------------------------------------------------------


def seed(**options: Any) -> str:
    out = StringIO()
    call_command("seed_demo", stdout=out, **options)
    return out.getvalue()


def test_seed_demo_creates_the_demo_users_with_their_roles(db):
    output = seed()
    users = {user.username: user for user in get_user_model().objects.all()}
    groups = {name: set(user.groups.values_list("name", flat=True)) for name, user in users.items()}
    assert groups["curator"] == {"curator"} and groups["curator2"] == {"curator"}
    assert groups["reviewer"] == {"reviewer"} and groups["reviewer2"] == {"reviewer", "curator"}
    assert groups["trainer"] == {"trainer"} and groups["admin"] == {"admin"}
    assert users["admin"].is_superuser and users["admin"].is_staff
    assert not any(users[name].is_staff for name in ("curator", "curator2", "reviewer", "reviewer2", "trainer"))
    assert users["curator"].check_password("curator-demo")
    assert "reviewer2-demo" in output
    assert f"\ncatalogue: {len(ENTRIES)} created, 0 updated, 0 unchanged" in output
    assert f"repository catalogue: {len(SEEDED) - len(ENTRIES)} created, 0 updated, 0 unchanged" in output


def test_running_seed_demo_twice_creates_no_new_users_tasks_or_versions(db):
    seed()
    counts = (get_user_model().objects.count(), Task.objects.count(), TaskVersion.objects.count())
    transitions = Transition.objects.count()
    output = seed()
    assert (get_user_model().objects.count(), Task.objects.count(), TaskVersion.objects.count()) == counts
    assert Transition.objects.count() == transitions
    assert f"catalogue: 0 created, 0 updated, {len(ENTRIES)} unchanged" in output
    assert counts[1] == len(SEEDED) and counts[2] == len(SEEDED)


def test_seeding_puts_every_task_in_its_seed_state_and_the_reviewer_queue_has_work(db):
    seed()
    states = dict(Task.objects.values_list("slug", "state"))
    assert states == {entry.slug: entry.seed_state for entry in SEEDED}
    assert Task.objects.filter(state__in=[State.VERIFIED, State.FLAGGED]).exists()


def test_no_approved_task_was_approved_by_its_author(db):
    seed()
    approvals = Transition.objects.filter(to_state=State.APPROVED).select_related("task", "version")
    assert approvals.count() == Counter(e.seed_state for e in SEEDED)[State.APPROVED] > 0
    for approval in approvals:
        assert approval.actor.username == "reviewer"
        assert approval.actor_id != approval.task.owner_id
        assert approval.actor_id != approval.version.author_id
        assert approval.task.approved_version_id == approval.version_id


def test_verified_and_flagged_come_from_the_system_actor(db):
    seed()
    marks = Transition.objects.filter(to_state__in=[State.VERIFIED, State.FLAGGED])
    assert marks.exists() and not marks.filter(actor__isnull=False).exists()


def test_seed_demo_refuses_without_force_when_not_embedded(db, settings):
    settings.EMBEDDED = False
    with pytest.raises(CommandError, match="embedded"):
        seed()
    assert not get_user_model().objects.exists() and not Task.objects.exists()
    assert "catalogue:" in seed(force=True)


def test_seed_demo_keeps_existing_passwords_and_never_lowers_roles(db):
    existing = UserFactory(username="curator", roles=["curator", "admin"])
    output = seed()
    existing.refresh_from_db()
    assert existing.check_password("correct-horse-battery")
    assert set(existing.groups.values_list("name", flat=True)) == {"curator", "admin"}
    assert "existing (password not changed)" in output
    assert Task.objects.filter(owner=existing).count() == len(SEEDED)


def test_loading_changed_content_adds_a_version_and_never_moves_unchanged_tasks(db):
    curator = UserFactory(username="cora", roles=["curator"])
    reviewer = UserFactory(username="rita", roles=["reviewer"])
    catalogue_load(owner=curator, reviewer=reviewer)
    draft = next(e for e in ENTRIES if e.seed_state == State.DRAFT)
    task_retire(actor=curator, task=Task.objects.get(slug=draft.slug))
    changed_entry = next(e for e in ENTRIES if e.seed_state == State.APPROVED)
    changed = CatalogueEntry(
        area=changed_entry.area,
        slug=changed_entry.slug,
        title=changed_entry.title,
        tags=changed_entry.tags,
        seed_state=changed_entry.seed_state,
        data={**changed_entry.data, "statement": changed_entry.data["statement"] + "\nReworded.\n"},
    )
    entries = [changed if e.slug == changed.slug else e for e in ENTRIES]

    report = catalogue_load(owner=curator, reviewer=reviewer, entries=entries)

    assert (report.created, report.updated) == ([], [changed.slug])
    assert len(report.unchanged) == len(ENTRIES) - 1
    assert Task.objects.get(slug=draft.slug).state == State.RETIRED
    task = Task.objects.get(slug=changed.slug)
    assert task.latest_version.number == 2 and task.latest_version.statement.endswith("Reworded.\n")
    assert task.approved_version.number == 1


def test_the_reviewer_may_not_be_the_owner(db):
    both = UserFactory(username="cris", roles=["curator", "reviewer"])
    with pytest.raises(PermissionDenied, match="Four eyes"):
        catalogue_load(owner=both, reviewer=both)
    assert not Task.objects.exists()


def test_seed_demo_table_lists_every_role(db):
    output = seed()
    for role in ROLES:
        assert role in output

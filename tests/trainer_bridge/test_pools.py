"""Pools select approved tasks by their figures and flags; snapshots freeze the
selection under a hash, stratified and seeded; two snapshots diff."""

from __future__ import annotations

import pytest

from evaluation.models import Flag, TaskFlag, Verification
from tasks_app.errors import ImmutableVersionError, ValidationFailed
from tasks_app.models import State
from tasks_app.services import task_approve, task_submit, task_transition
from tests.factories import make_task
from trainer_bridge.criteria import PoolCriteria
from trainer_bridge.models import Snapshot
from trainer_bridge.services.pools import pool_create, pool_preview, snapshot_create, snapshot_diff

pytestmark = pytest.mark.django_db


def _approved(curator, reviewer, slug, *, tags=("arithmetic",), verdict="verified", noise=0.05, flags=(), **kw):
    task = make_task(owner=curator, slug=slug, title=slug, tags=tags, **kw)
    task_submit(actor=curator, task=task)
    task_transition(actor=None, task=task, to_state=State.VERIFIED if verdict == "verified" else State.FLAGGED)
    task.refresh_from_db()
    task_approve(actor=reviewer, task=task, note="" if verdict == "verified" else "waived: known")
    task.refresh_from_db()
    verification = Verification.objects.create(version=task.approved_version, config_hash=slug.ljust(64, "0")[:64],
                                               config={}, state="done", verdict=verdict,
                                               summary={"reward_noise": {"value": noise}})  # fmt: skip
    for code in flags:
        Flag.objects.create(verification=verification, code=code, severity="error", message=code)
    return task


@pytest.fixture
def catalogue(curator, reviewer):
    tasks = [_approved(curator, reviewer, f"easy-{i}", tags=("arithmetic",)) for i in range(6)]
    tasks += [_approved(curator, reviewer, f"text-{i}", tags=("strings",), noise=0.2) for i in range(4)]
    tasks.append(_approved(curator, reviewer, "hackable", flags=("HACKABLE",)))
    tasks.append(_approved(curator, reviewer, "waived", verdict="flagged"))
    dup = _approved(curator, reviewer, "copy")
    TaskFlag.objects.create(task=dup, code="DUPLICATE", severity="error", message="dup", related=tasks[0])
    make_task(owner=curator, slug="draft-only")  # never approved: never in a pool
    return tasks


def test_the_preview_counts_what_matches_by_band_and_tag(catalogue):
    preview = pool_preview(criteria=PoolCriteria())
    assert preview["approved"] == 13
    assert preview["matched"]["count"] == 11  # HACKABLE and DUPLICATE left out by default
    assert preview["matched"]["by_tag"] == {"arithmetic": 7, "strings": 4}
    assert preview["matched"]["by_band"] == {"unknown": 11}
    strict = pool_preview(criteria=PoolCriteria.parse({"require_verified": True, "max_reward_noise": 0.1}))
    assert strict["matched"]["count"] == 6 and "waived" not in strict["tasks"]
    only_text = pool_preview(criteria=PoolCriteria.parse({"tags_include": ["strings"]}))
    assert only_text["tasks"] == ["text-0", "text-1", "text-2", "text-3"]
    no_text = pool_preview(criteria=PoolCriteria.parse({"tags_exclude": "strings", "exclude_flags": []}))
    assert no_text["matched"]["count"] == 9 and "hackable" in no_text["tasks"]


def test_sampling_is_stratified_seeded_and_frozen_under_a_hash(catalogue, curator):
    pool = pool_create(slug="mix", title="Mix", criteria={"max_size": 5, "seed": 3}, actor=curator)
    preview = pool_preview(criteria=PoolCriteria.parse(pool.criteria))
    # 7 arithmetic and 4 strings tasks: 5 drawn in proportion, 3 and 2 (largest remainder).
    assert preview["selected"]["by_tag"] == {"arithmetic": 3, "strings": 2}
    snapshot, created = snapshot_create(pool=pool, actor=curator)
    assert created and snapshot.size == 5 and len(snapshot.hash) == 64
    members = list(snapshot.members.values_list("task__slug", flat=True))
    assert members == sorted(members) == preview["tasks"]
    again, created_again = snapshot_create(pool=pool)
    assert not created_again and again.pk == snapshot.pk  # the same selection: the same snapshot
    with pytest.raises(ImmutableVersionError):
        snapshot.save()
    with pytest.raises(ImmutableVersionError):
        Snapshot.objects.filter(pk=snapshot.pk).update(size=1)


def test_a_diff_names_added_removed_and_changed_tasks(catalogue, curator, reviewer):
    from tasks_app.content import VersionContent
    from tasks_app.services import task_version_create
    from tests.factories import content_data

    pool = pool_create(slug="all", title="All", criteria={"tags_include": ["strings"]})
    first, _ = snapshot_create(pool=pool)
    changed = catalogue[6]  # text-0 gets a new approved version
    task_version_create(actor=curator, task=changed, content=VersionContent.parse(content_data(
        hidden_tests=["assert add(2, 2) == 4", "assert add(0, 0) == 0"])), changelog="More tests.")  # fmt: skip
    changed.refresh_from_db()
    task_submit(actor=curator, task=changed)
    task_transition(actor=None, task=changed, to_state=State.VERIFIED)
    task_approve(actor=reviewer, task=changed)
    _approved(curator, reviewer, "text-new", tags=("strings",))
    second, created = snapshot_create(pool=pool)
    assert created and second.hash != first.hash
    diff = snapshot_diff(old=first, new=second)
    assert diff["added"] == ["text-new"] and diff["removed"] == []
    assert [c["task"] for c in diff["changed"]] == ["text-0"]


@pytest.mark.parametrize(
    ("criteria", "field"),
    [({"max_size": 0}, "max_size"), ({"bands": ["EASY"]}, "bands"), ({"max_reward_noise": 2}, "max_reward_noise"),
     ({"difficulty_min": 2, "difficulty_max": 1}, "difficulty_min"), ({"colour": "red"}, "criteria"),
     ({"require_verified": "yes"}, "require_verified"), ({"exclude_flags": ["NOPE"]}, "exclude_flags"),
     ({"tags_include": [1, 2]}, "tags_include"), ({"seed": -1}, "seed"), ({"languages": ["cobol"]}, "languages"),
     ({"languages": "python, fortran"}, "languages")],
)  # fmt: skip
def test_bad_criteria_are_refused_naming_the_field(criteria, field):
    with pytest.raises(ValidationFailed) as error:
        PoolCriteria.parse(criteria)
    assert field in error.value.details


def test_a_pool_that_selects_nothing_is_not_frozen_and_names_are_unique(catalogue):
    pool = pool_create(slug="none", title="None", criteria={"tags_include": ["graphs"]})
    with pytest.raises(ValidationFailed, match="selects no task"):
        snapshot_create(pool=pool)
    with pytest.raises(ValidationFailed, match="exists already"):
        pool_create(slug="none", title="Again", criteria={})


def test_bands_and_difficulty_ranges_come_from_the_latest_fit(catalogue):
    from evaluation.models import DifficultyFit

    DifficultyFit.objects.create(
        state="done",
        abilities={"policy": {"value": 0.0, "low": -0.5, "high": 0.5}},
        difficulties={f"easy-{i}": {"value": -4.0 + i, "low": None, "high": None, "attempts": 10} for i in range(6)},
    )
    learnable = pool_preview(criteria=PoolCriteria.parse({"bands": ["LEARNABLE"]}))
    # Against the one solver (ability 0): easy-0 and easy-1 pass 98% and 95% of the time, TOO_EASY.
    assert learnable["tasks"] == ["easy-2", "easy-3", "easy-4", "easy-5"]
    ranged = pool_preview(criteria=PoolCriteria.parse({"difficulty_min": -1.5, "difficulty_max": 0.5}))
    assert ranged["tasks"] == ["easy-3", "easy-4"]  # tasks with no difficulty never match a range
    unknown = pool_preview(criteria=PoolCriteria.parse({"bands": ["unknown"]}))
    assert unknown["matched"]["count"] == 5 and not any(t.startswith("easy") for t in unknown["tasks"])


def test_a_pool_selects_by_language_and_the_preview_counts_each(curator, reviewer):
    _approved(curator, reviewer, "add-python")
    _approved(curator, reviewer, "sum-c", language="c", suite_kind="stdio", entry_point="", starter_code="",
              test_setup="", visible_tests=[{"input": "1 2\n", "output": "3\n"}],
              hidden_tests=[{"input": "2 2\n", "output": "4\n"}, {"input": "0 0\n", "output": "0\n"}],
              solutions=[{"role": "reference", "label": "ref",
                          "code": '#include <stdio.h>\nint main(void){long a,b;scanf("%ld %ld",&a,&b);'
                                  'printf("%ld\\n",a+b);return 0;}\n'}])  # fmt: skip
    preview = pool_preview(criteria=PoolCriteria())
    assert preview["matched"]["by_language"] == {"c": 1, "python": 1}
    only_c = pool_preview(criteria=PoolCriteria.parse({"languages": "c"}))
    assert only_c["matched"]["count"] == 1 and only_c["selected"]["by_language"] == {"c": 1}
    # Unset, the criterion is not in a pool's criteria at all: earlier pools read as they did.
    assert "languages" not in PoolCriteria().as_dict()
    assert PoolCriteria.parse({"languages": ["c", "c"]}).as_dict()["languages"] == ["c"]

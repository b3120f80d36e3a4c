from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from tasks_app.content import VersionContent
from tasks_app.errors import Conflict, ImmutableVersionError, InvalidTransition, PermissionDenied
from tasks_app.models import Solution, State, TaskVersion
from tasks_app.services import task_retire, task_version_create
from tests.factories import content_data, make_task


def test_a_new_task_has_version_one_in_draft_with_a_sha256(curator):
    task = make_task(owner=curator)
    version = task.latest_version
    assert (version.number, task.state) == (1, State.DRAFT)
    assert len(version.content_hash) == 64
    assert version.content_hash == VersionContent.from_version(version).content_hash()
    assert sorted(s.label for s in version.solutions.all()) == ["off-by-one", "ref"]


def test_saving_changed_content_makes_a_new_version(curator):
    task = make_task(owner=curator)
    changed = VersionContent.parse(content_data(statement="Add them."))
    result = task_version_create(actor=curator, task=task, content=changed, changelog="Reword")
    assert result.created and result.version.number == 2
    assert result.version.parent_id == task.latest_version_id
    assert TaskVersion.objects.get(task=task, number=1).statement == "Return the sum of `a` and `b`."


def test_saving_unchanged_content_makes_no_version(curator):
    task = make_task(owner=curator)
    same = VersionContent.parse(content_data())
    result = task_version_create(actor=curator, task=task, content=same)
    assert not result.created and result.version.number == 1
    assert task.versions.count() == 1


def test_the_hash_ignores_solution_order_but_not_test_order():
    data = content_data()
    swapped = content_data(solutions=list(reversed(data["solutions"])))
    reordered = content_data(hidden_tests=list(reversed(data["hidden_tests"])))
    base = VersionContent.parse(data).content_hash()
    assert VersionContent.parse(swapped).content_hash() == base
    assert VersionContent.parse(reordered).content_hash() != base


def test_it_rejects_a_version_edit_in_the_model(curator):
    version = make_task(owner=curator).latest_version
    version.statement = "tampered"
    with pytest.raises(ImmutableVersionError):
        version.save()
    with pytest.raises(ImmutableVersionError):
        TaskVersion.objects.filter(pk=version.pk).update(statement="tampered")
    solution = version.solutions.first()
    solution.code = "x = 1"
    with pytest.raises(ImmutableVersionError):
        solution.save()


@pytest.mark.parametrize("table", ["tasks_app_taskversion", "tasks_app_solution"])
def test_the_database_refuses_an_update_of_a_saved_version(curator, table):
    make_task(owner=curator)
    column = "statement" if table == "tasks_app_taskversion" else "code"
    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {column} = 'tampered'")  # noqa: S608 - fixed identifiers
    assert not TaskVersion.objects.filter(statement="tampered").exists()
    assert not Solution.objects.filter(code="tampered").exists()


def test_an_edit_based_on_an_old_version_is_a_conflict(curator, other_curator):
    task = make_task(owner=curator)
    task_version_create(actor=other_curator, task=task, content=VersionContent.parse(content_data(statement="B")))
    with pytest.raises(Conflict, match="v1, the newest is v2"):
        task_version_create(
            actor=curator, task=task, content=VersionContent.parse(content_data(statement="C")), base_number=1
        )


def test_only_curators_author(reviewer):
    with pytest.raises(PermissionDenied):
        make_task(owner=reviewer)


def test_a_retired_task_cannot_be_edited(curator):
    task = make_task(owner=curator)
    task_retire(actor=curator, task=task)
    with pytest.raises(InvalidTransition, match="retired"):
        task_version_create(actor=curator, task=task, content=VersionContent.parse(content_data(statement="x")))


def test_deleting_a_task_removes_its_versions(curator):
    task = make_task(owner=curator)
    task_version_create(actor=curator, task=task, content=VersionContent.parse(content_data(statement="B")))
    task.delete()
    assert TaskVersion.objects.count() == 0

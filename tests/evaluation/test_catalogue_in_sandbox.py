"""The sample catalogue, run for real: from saved versions, through
`run_request_for`, in the sandbox. Every reference passes; every wrong
solution is caught."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from evaluation.sandbox import engine
from evaluation.sandbox.run_requests import run_request_for
from evaluation.sandbox.types import Status
from tasks_app.catalogue import catalogue_load
from tasks_app.models import TaskVersion

pytestmark = pytest.mark.django_db


def test_every_reference_passes_and_every_wrong_solution_is_caught(sandbox, curator, reviewer):
    backend, pool = sandbox
    catalogue_load(owner=curator, reviewer=reviewer)
    runs = [
        (version.task.slug, solution.role, solution.label, run_request_for(version, solution.code, seed=3))
        for version in TaskVersion.objects.select_related("task").prefetch_related("solutions")
        for solution in version.solutions.all()
    ]
    with ThreadPoolExecutor(pool.size) as workers:
        results = list(workers.map(lambda r: engine.run(r[3], backend=backend, pool=pool), runs))
    verdicts = {(slug, role, label): result for (slug, role, label, _), result in zip(runs, results, strict=True)}
    assert len({slug for slug, _, _ in verdicts}) >= 44
    wrong_refs = {k: (v.status, v.message[:200]) for k, v in verdicts.items() if k[1] == "reference" and not v.passed}
    assert wrong_refs == {}
    passing_fakes = [k for k, v in verdicts.items() if k[1] == "adversarial" and v.passed]
    assert passing_fakes == []
    assert not any(v.status == Status.SANDBOX_ERROR for v in verdicts.values())


def test_a_request_carries_the_versions_limits_and_every_test(curator, reviewer):
    catalogue_load(owner=curator, reviewer=reviewer)
    version = TaskVersion.objects.filter(suite_kind="stdio").first()
    request = run_request_for(version, "print()", seed=5, repeat=2)
    assert request.limits.wall_s == version.time_limit_s and request.limits.memory_mb == version.memory_limit_mb
    assert request.tests["hidden"] == version.hidden_tests and request.tests["visible"] == version.visible_tests
    assert (request.seed, request.repeat, request.suite_kind) == (5, 2, "stdio")

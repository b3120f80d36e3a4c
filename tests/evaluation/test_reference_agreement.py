"""The boundary corpus of bench/reference_agreement.py, held to its goal: every
reference one plain process accepts, the judge accepts too, and every wrong twin fails."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from evaluation.sandbox import engine

from .conftest import needs_bwrap

pytestmark = needs_bwrap


def test_the_judge_accepts_every_boundary_reference_a_plain_process_accepts_and_no_wrong_twin(bwrap_pool):
    from bench.reference_agreement import BOUNDARY, in_one_process

    assert len(BOUNDARY) >= 15
    with ThreadPoolExecutor(bwrap_pool.size) as workers:
        baseline = list(workers.map(lambda r: in_one_process(r.request), BOUNDARY))
        judged = list(workers.map(lambda r: engine.run(r.request, backend="bwrap", pool=bwrap_pool), BOUNDARY))
        twins = list(workers.map(
            lambda r: engine.run(replace(r.request, solution=r.wrong), backend="bwrap", pool=bwrap_pool), BOUNDARY
        ))  # fmt: skip
    assert [r.name for r, failures in zip(BOUNDARY, baseline, strict=True) if failures] == []
    rejected = {r.name: (j.status, j.message[:200], [t.message[:200] for t in j.tests if t.outcome != "passed"])
                for r, j in zip(BOUNDARY, judged, strict=True) if not j.passed}  # fmt: skip
    assert rejected == {}
    assert [r.name for r, t in zip(BOUNDARY, twins, strict=True) if t.passed] == []

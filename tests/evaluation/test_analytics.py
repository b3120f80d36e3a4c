"""The analytics dashboard: every chart drawn without scripts, narrowed by tag and
state, and downloadable as the very frame it draws (CSV and Parquet)."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from django.urls import reverse

from evaluation.difficulty import analytics
from evaluation.difficulty.fits import difficulty_fit_create
from evaluation.difficulty.rollouts import outcomes_record
from evaluation.models import Execution, Flag, TaskFlag, Verification
from tasks_app.models import State, Task
from tests.factories import UserFactory, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalogue(curator):
    one = make_task(owner=curator, slug="add-two")
    two = make_task(owner=curator, slug="add-three", title="Again", tags=("strings",))
    Task.objects.filter(pk=two.pk).update(state=State.SUBMITTED)
    for task, noise, score in ((one, 0.1, 0.9), (two, 0.3, 0.5)):
        verification = Verification.objects.create(version=task.latest_version, config_hash="c" * 64, config={},
                                                   state="done", total=1, done=1, verdict="flagged",
                                                   summary={"mutation_score": {"value": score},
                                                            "reward_noise": {"value": noise}})  # fmt: skip
        Flag.objects.create(verification=verification, code="WEAK_TESTS", severity="error", message="weak")
        Execution.objects.create(verification=verification, key="k", role="reference", subject="ref", code="x",
                                 status="passed", finished_at=verification.created_at)  # fmt: skip
    TaskFlag.objects.create(task=one, code="DUPLICATE", severity="error", message="dup", related=two)
    rows = [{"task_id": t, "solver": s, "sample_id": str(i), "passed": bool(ok)}
            for t, s, oks in (("add-two", "strong", [1, 1, 1, 1, 1, 0]), ("add-three", "strong", [1, 0, 0, 1, 0, 0]),
                              ("add-two", "weak", [1, 0, 1, 0, 0, 0]), ("add-three", "weak", [0, 0, 0, 0, 0, 1]))
            for i, ok in enumerate(oks)]  # fmt: skip
    outcomes_record(outcomes=rows)
    difficulty_fit_create(bootstrap=5)
    return one, two


def test_every_chart_has_its_frame_and_filters_narrow_them(catalogue):
    everything = analytics.Filters()
    assert analytics.chart_frame("flags", everything).to_dict("records") == [
        {"flag": "WEAK_TESTS", "tasks": 2}, {"flag": "DUPLICATE", "tasks": 1}]  # fmt: skip
    funnel = analytics.chart_frame("funnel", everything).set_index("state")["tasks"]
    assert funnel["draft"] == 1 and funnel["submitted"] == 1 and funnel.sum() == 2
    assert sorted(analytics.chart_frame("mutation", everything)["mutation_score"]) == [0.5, 0.9]
    noise = analytics.chart_frame("noise", everything)
    assert set(noise["task"]) == {"add-two", "add-three"} and set(noise["source"]) == {"measured"}
    assert analytics.chart_frame("throughput", everything)["executions"].sum() == 2
    assert list(analytics.chart_frame("solvers", everything)["solver"]) == ["strong", "weak"]

    strings = analytics.Filters(tag="strings")
    assert list(analytics.chart_frame("difficulty", strings)["task"]) == ["add-three"]
    assert analytics.chart_frame("flags", strings).to_dict("records") == [{"flag": "WEAK_TESTS", "tasks": 1}]
    assert analytics.Filters.from_params({"state": "nonsense", "tag": " x "}) == analytics.Filters(tag="x")


def test_the_page_draws_svg_and_downloads_the_same_frames(client, curator, catalogue):
    client.force_login(curator)
    page = client.get(reverse("verification:analytics"), {"tag": "strings"}).content.decode()
    assert page.count("<svg") == len(analytics.CHARTS) and "<script" not in page.split("<main", 1)[-1]
    assert "Reward noise against difficulty" in page and "?tag=strings" in page
    csv = client.get(reverse("verification:analytics-download", args=["funnel", "csv"]))
    assert csv["Content-Disposition"] == 'attachment; filename="funnel.csv"'
    assert pd.read_csv(io.StringIO(csv.content.decode())).equals(analytics.chart_frame("funnel", analytics.Filters()))
    parquet = client.get(reverse("verification:analytics-download", args=["difficulty", "parquet"]), {"tag": "strings"})
    frame = pd.read_parquet(io.BytesIO(parquet.content))
    assert list(frame["task"]) == ["add-three"]
    assert client.get(reverse("verification:analytics-download", args=["nope", "csv"])).status_code == 404
    assert client.get(reverse("verification:analytics-download", args=["funnel", "xlsx"])).status_code == 404


def test_an_empty_platform_draws_placeholders_not_errors(client, curator):
    client.force_login(curator)
    page = client.get(reverse("verification:analytics")).content.decode()
    assert "No data yet" in page
    client.force_login(UserFactory(username="nobody", roles=[]))
    assert client.get(reverse("verification:analytics")).status_code == 403

"""The analytics dashboard's figures, each one a pandas DataFrame: the page draws
it (evaluation/ui/charts.py, inline SVG, no script or CDN) and the same frame
downloads as CSV or Parquet, so what a curator sees is what they get.

Every chart but the solvers' abilities can be narrowed to tasks with a tag
and in a state.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pandas as pd
from django.db.models import F, QuerySet

from evaluation.difficulty.selectors import difficulty_table
from evaluation.models import Execution, Flag, TaskFlag, Verification
from evaluation.verification.generated.selectors import ROW_FIGURES, proposal_counts, row_figures
from tasks_app.models import State, Task

FUNNEL = [State.DRAFT, State.SUBMITTED, State.VERIFIED, State.FLAGGED, State.APPROVED, State.REJECTED, State.RETIRED]


@dataclass(frozen=True)
class Filters:
    tag: str = ""
    state: str = ""

    @classmethod
    def from_params(cls, params: Any) -> Filters:
        state = params.get("state", "")
        return cls(tag=(params.get("tag") or "").strip()[:64], state=state if state in State.values else "")

    def tasks(self) -> QuerySet[Task]:
        tasks = Task.objects.all()
        if self.tag:
            tasks = tasks.filter(tags__name=self.tag)
        if self.state:
            tasks = tasks.filter(state=self.state)
        return tasks


class Data:
    """What several charts read, fetched once per page: the latest fit read as a table,
    and each task's latest verification summary."""

    def __init__(self, filters: Filters) -> None:
        self.filters = filters

    @cached_property
    def table(self) -> dict[str, Any] | None:
        return difficulty_table()

    @cached_property
    def summaries(self) -> pd.DataFrame:
        return _latest_summaries(self.filters)


def _latest_summaries(filters: Filters) -> pd.DataFrame:
    """One row per task: the summary of its latest version's newest finished verification,
    with what its generated inputs proved (ROW_FIGURES; null where none were generated)."""
    rows = (
        Verification.objects.filter(version__task__in=filters.tasks(), summary__isnull=False)
        .exclude(version__task__latest_version=None)
        .filter(version_id=F("version__task__latest_version_id"))
        .order_by("version__task__slug", "-created_at")
        .values("pk", "version__task__slug", "summary", "created_at")
    )
    seen, latest = set(), []
    for row in rows:
        slug = row["version__task__slug"]
        if slug in seen:
            continue
        seen.add(slug)
        latest.append(row)
    counts = proposal_counts(row["pk"] for row in latest)
    out = []
    for row in latest:
        summary = row["summary"] or {}
        out.append(
            {
                "task": row["version__task__slug"],
                "mutation_score": (summary.get("mutation_score") or {}).get("value"),
                "reward_noise": (summary.get("reward_noise") or {}).get("value"),
                **row_figures(summary, counts.get(row["pk"])),
            }
        )
    return pd.DataFrame(out, columns=["task", "mutation_score", "reward_noise", *ROW_FIGURES])


def difficulty(data: Data) -> pd.DataFrame:
    filters, table = data.filters, data.table
    columns = ["task", "difficulty", "low", "high", "source", "attempts", "band"]
    if table is None:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(table["tasks"])[columns]
    return frame[frame["task"].isin(set(filters.tasks().values_list("slug", flat=True)))].reset_index(drop=True)


def noise_vs_difficulty(data: Data) -> pd.DataFrame:
    merged = difficulty(data)[["task", "difficulty", "source"]].merge(data.summaries, on="task")
    return (
        merged[["task", "difficulty", "source", "reward_noise"]].dropna(subset=["reward_noise"]).reset_index(drop=True)
    )


def mutation_scores(data: Data) -> pd.DataFrame:
    """Each task's mutation score; the download carries what its generated inputs proved too."""
    frame = data.summaries[["task", "mutation_score", *ROW_FIGURES]]
    return frame.dropna(subset=["mutation_score"]).reset_index(drop=True)


def flags_by_kind(data: Data) -> pd.DataFrame:
    """Flags on each task's latest verification, and task flags (duplicates, bands), counted by code."""
    tasks = data.filters.tasks()
    codes = list(
        Flag.objects.filter(
            verification__version__task__in=tasks,
            verification__version_id=F("verification__version__task__latest_version_id"),
        )
        .values_list("code", "verification__version__task__slug")
        .distinct()
    )
    codes += list(TaskFlag.objects.filter(task__in=tasks).values_list("code", "task__slug").distinct())
    frame = pd.DataFrame(codes, columns=["flag", "task"]).drop_duplicates()
    counted = frame.groupby("flag").size().rename("tasks").reset_index()
    return counted.sort_values(["tasks", "flag"], ascending=[False, True]).reset_index(drop=True)


def state_funnel(data: Data) -> pd.DataFrame:
    counts = pd.Series(list(data.filters.tasks().values_list("state", flat=True)), dtype="object").value_counts()
    return pd.DataFrame({"state": [s.value for s in FUNNEL], "tasks": [int(counts.get(s.value, 0)) for s in FUNNEL]})


def throughput(data: Data, *, hours: int = 48) -> pd.DataFrame:
    """Executions finished per hour over the last `hours` hours, by status."""
    from datetime import timedelta

    from django.utils import timezone

    since = timezone.now() - timedelta(hours=hours)
    rows = Execution.objects.filter(
        finished_at__gte=since, verification__version__task__in=data.filters.tasks()
    ).values_list("finished_at", "status")
    frame = pd.DataFrame(list(rows), columns=["finished_at", "status"])
    if frame.empty:
        return pd.DataFrame(columns=["hour", "executions", "sandbox_errors"])
    frame["hour"] = pd.to_datetime(frame["finished_at"], utc=True).dt.floor("h")
    grouped = frame.groupby("hour").agg(
        executions=("status", "size"), sandbox_errors=("status", lambda s: int((s == "sandbox_error").sum()))
    )
    grouped = grouped.reset_index()
    grouped["hour"] = grouped["hour"].dt.strftime("%Y-%m-%d %H:00")
    return grouped


def solver_ability(data: Data) -> pd.DataFrame:
    table = data.table
    if table is None:
        return pd.DataFrame(columns=["solver", "ability", "low", "high"])
    return pd.DataFrame(table["solvers"], columns=["solver", "ability", "low", "high"])


CHARTS = {
    "difficulty": ("Difficulty (measured and predicted)", difficulty),
    "noise": ("Reward noise against difficulty", noise_vs_difficulty),
    "mutation": ("Mutation scores", mutation_scores),
    "flags": ("Flags by kind", flags_by_kind),
    "funnel": ("Tasks by state", state_funnel),
    "throughput": ("Verification throughput (executions an hour, last 48 h)", throughput),
    "solvers": ("Solver ability", solver_ability),
}


def chart_frame(name: str, filters: Filters | Data) -> pd.DataFrame:
    """One chart's frame; pass a Data to share its fetches across charts of one page."""
    if name not in CHARTS:
        raise KeyError(name)
    return CHARTS[name][1](filters if isinstance(filters, Data) else Data(filters))

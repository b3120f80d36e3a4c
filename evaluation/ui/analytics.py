"""The analytics dashboard and its downloads. Thin: evaluation.difficulty.analytics builds each
figure's DataFrame, evaluation.ui.charts draws it."""

from __future__ import annotations

import io

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evaluation.ui import charts
from evaluation.ui.difficulty import _require
from tasks_app.models import State, Tag
from tasks_app.roles import CURATOR, REVIEWER, TRAINER
from tasks_app.ui.views.common import domain_errors


def _draw(name: str, frame: object) -> str:
    from evaluation.difficulty import analytics

    title = analytics.CHARTS[name][0]
    if name == "difficulty":
        return charts.histogram(
            title,
            {
                source: frame.loc[frame["source"] == source, "difficulty"].tolist()
                for source in ("measured", "predicted", "measured_few_attempts")
                if (frame["source"] == source).any()
            },
        )
    if name == "noise":
        return charts.scatter(
            title,
            frame["difficulty"].tolist(),
            frame["reward_noise"].tolist(),
            frame["task"].tolist(),
            x_name="difficulty",
            y_name="reward noise",
        )
    if name == "mutation":
        return charts.histogram(title, {"mutation score": frame["mutation_score"].tolist()}, bins=10)
    if name == "flags":
        return charts.bars(title, frame["flag"].tolist(), frame["tasks"].tolist())
    if name == "funnel":
        return charts.bars(title, frame["state"].tolist(), frame["tasks"].tolist())
    if name == "throughput":
        return charts.bars(title, frame["hour"].tolist(), frame["executions"].tolist())
    return charts.bars(
        title,
        frame["solver"].tolist(),
        [round(v, 2) for v in frame["ability"]],
        errors=list(zip(frame["low"], frame["high"], strict=True)),
    )


@login_required
@require_GET
@domain_errors
def dashboard(request: HttpRequest) -> HttpResponse:
    from evaluation.difficulty import analytics  # pandas: loaded by the pages that draw, not at start-up

    _require(request, CURATOR, REVIEWER, TRAINER)
    filters = analytics.Filters.from_params(request.GET)
    query = request.GET.urlencode()
    figures, data = [], analytics.Data(filters)  # the fit and the summaries, fetched once for all charts
    for name, (title, _) in analytics.CHARTS.items():
        frame = analytics.chart_frame(name, data)
        figures.append({"name": name, "title": title, "svg": _draw(name, frame), "rows": len(frame)})
    context = {
        "figures": figures,
        "filters": filters,
        "query": query,
        "states": State.values,
        "tags": Tag.objects.order_by("name").values_list("name", flat=True),
    }
    return render(request, "evaluation/analytics.html", context)


@login_required
@require_GET
@domain_errors
def download(request: HttpRequest, name: str, fmt: str) -> HttpResponse:
    from evaluation.difficulty import analytics  # pandas: loaded by the pages that draw, not at start-up

    _require(request, CURATOR, REVIEWER, TRAINER)
    if name not in analytics.CHARTS or fmt not in ("csv", "parquet"):
        raise Http404(f"No chart {name!r} as {fmt!r}: charts are {', '.join(analytics.CHARTS)}; formats csv, parquet.")
    frame = analytics.chart_frame(name, analytics.Filters.from_params(request.GET))
    if fmt == "csv":
        response = HttpResponse(frame.to_csv(index=False), content_type="text/csv; charset=utf-8")
    else:
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        response = HttpResponse(buffer.getvalue(), content_type="application/vnd.apache.parquet")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response

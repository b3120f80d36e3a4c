"""The pool pages: list, create with a live preview, a pool with its snapshots, a
diff between two of them, and exports (streamed, or built in the background with
their progress). Thin: services and selectors do the work.

Curators, reviewers and admins make and freeze pools; trainers look, and export
the snapshots of their training jobs.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from tasks_app.errors import DomainError, NotFound, PermissionDenied, ValidationFailed
from tasks_app.roles import CURATOR, REVIEWER, TRAINER, has_role
from tasks_app.ui.views.common import domain_errors
from trainer_bridge import export
from trainer_bridge.criteria import PoolCriteria
from trainer_bridge.models import Pool
from trainer_bridge.services.builds import build_get, build_needs_worker, build_request
from trainer_bridge.services.jobs import can_read_snapshot, readable_snapshot_ids
from trainer_bridge.services.pools import pool_create, pool_preview, snapshot_create, snapshot_diff, snapshot_get
from trainer_bridge.tasks import enqueue_build
from trainer_bridge.ui import selectors
from trainer_bridge.ui.forms import PoolForm, criteria_facts, criteria_summary

VIEWERS = (CURATOR, REVIEWER, TRAINER)
CURATORS = (CURATOR, REVIEWER)


def _require(request: HttpRequest, *roles: str) -> None:
    if not has_role(request.user, *roles):
        raise PermissionDenied("This needs the " + " or ".join(roles) + " role.")


def _pool(slug: str) -> Pool:
    pool = Pool.objects.filter(slug=slug).first()
    if pool is None:
        raise NotFound(f"No pool {slug!r}.")
    return pool


@login_required
@require_GET
@domain_errors
def pool_list(request: HttpRequest) -> HttpResponse:
    _require(request, *VIEWERS)
    pools = selectors.pool_rows()
    rows = [{"pool": p, "summary": criteria_summary(p.criteria)} for p in pools]
    context = {"rows": rows, "can_curate": has_role(request.user, *CURATORS)}
    return render(request, "trainer_bridge/pool_list.html", context)


def preview_of(criteria: PoolCriteria) -> dict[str, Any]:
    """pool_preview's figures, with (name, matched, frozen) rows for the band and tag tables."""
    result = pool_preview(criteria=criteria)
    matched, selected = result["matched"], result["selected"]
    result["rows"] = {
        key: [(name, count, selected[spread].get(name, 0)) for name, count in matched[spread].items()]
        for key, spread in (("bands", "by_band"), ("tags", "by_tag"), ("languages", "by_language"))
    }
    return result


def _form_page(request: HttpRequest, form: PoolForm, *, preview: Any = None, status: int = 200) -> HttpResponse:
    template = "trainer_bridge/_pool_form.html" if request.htmx else "trainer_bridge/pool_form.html"
    return render(request, template, {"form": form, "preview": preview}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
@domain_errors
def pool_new(request: HttpRequest) -> HttpResponse:
    _require(request, *CURATORS)
    if request.method == "GET":
        return _form_page(request, PoolForm.blank())
    form = PoolForm(request.POST)
    problems: list[ValidationFailed] = []
    try:
        # pool_create stops at a bad slug; the criteria's own problems show beside it.
        PoolCriteria.parse(form.criteria())
    except ValidationFailed as exc:
        problems.append(exc)
    try:
        pool = pool_create(
            slug=(request.POST.get("slug") or "").strip(),
            title=(request.POST.get("title") or "").strip(),
            criteria=form.criteria(),
            actor=request.user,
        )
    except ValidationFailed as exc:
        if not problems or exc.details != problems[0].details:
            problems.insert(0, exc)
    if problems:
        for problem in problems:
            form.add_domain_error(problem)
        return _form_page(request, form, status=400)
    messages.success(request, f"Pool {pool.slug} made: freeze a snapshot when the preview looks right.")
    return redirect("pools:detail", slug=pool.slug)


@login_required
@require_POST
@domain_errors
def preview(request: HttpRequest) -> HttpResponse:
    """The form again with what its criteria select now (or their errors beside the
    fields): htmx swaps it in place; without JavaScript it is the whole page."""
    _require(request, *CURATORS)
    form = PoolForm(request.POST)
    try:
        result = preview_of(PoolCriteria.parse(form.criteria()))
    except ValidationFailed as exc:
        form.add_domain_error(exc)
        return _form_page(request, form, status=400)
    return _form_page(request, form, preview=result)


def _diff(request: HttpRequest, pool: Pool, readable: set[int]) -> dict[str, Any] | None:
    old_hash, new_hash = request.GET.get("from", ""), request.GET.get("to", "")
    if not old_hash and not new_hash:
        return None
    try:
        if not old_hash or not new_hash:
            raise ValidationFailed("Choose both snapshots to compare.")
        old = snapshot_get(pool_slug=pool.slug, digest=old_hash)
        new = snapshot_get(pool_slug=pool.slug, digest=new_hash)
        if old.pk not in readable or new.pk not in readable:
            raise NotFound("Only the snapshots of your training jobs can be compared.")
    except DomainError as exc:
        return {"error": exc.message, "from": old_hash, "to": new_hash}
    return {"result": snapshot_diff(old=old, new=new), "from": old_hash, "to": new_hash, "old": old, "new": new}


@login_required
@require_GET
@domain_errors
def pool_detail(request: HttpRequest, slug: str) -> HttpResponse:
    _require(request, *VIEWERS)
    pool = _pool(slug)
    criteria = PoolCriteria.parse(pool.criteria)
    snapshots = selectors.pool_snapshots(pool)
    builds = selectors.latest_builds(snapshots)
    readable = readable_snapshot_ids(user=request.user, token=None, snapshots=snapshots)
    formats = list(export.FORMATS)
    rows = [
        {
            "snapshot": s,
            "readable": s.pk in readable,
            "exports": [
                {
                    "format": fmt,
                    "stream_url": reverse("api-snapshot-export", args=[pool.slug, s.hash]) + f"?format={fmt}",
                    "build": builds.get((s.pk, fmt)),
                    "slot": f"build-{s.pk}-{fmt}",
                }
                for fmt in formats
            ],
        }
        for s in snapshots
    ]
    context = {
        "pool": pool,
        "criteria": criteria_facts(pool.criteria),
        "summary": criteria_summary(pool.criteria),
        "preview": preview_of(criteria),
        "rows": rows,
        "diff": _diff(request, pool, readable),
        "can_curate": has_role(request.user, *CURATORS),
    }
    return render(request, "trainer_bridge/pool_detail.html", context)


@login_required
@require_POST
@domain_errors
def freeze(request: HttpRequest, slug: str) -> HttpResponse:
    _require(request, *CURATORS)
    pool = _pool(slug)
    try:
        snapshot, created = snapshot_create(pool=pool, actor=request.user)
    except ValidationFailed as exc:
        messages.error(request, f"Nothing frozen: {exc.message}")
    else:
        if created:
            messages.success(request, f"Froze snapshot {snapshot.hash[:12]} of {snapshot.size} task(s).")
        else:
            messages.info(request, f"Nothing changed since snapshot {snapshot.hash[:12]}: no new snapshot.")
    return redirect("pools:detail", slug=slug)


def _build_fragment(request: HttpRequest, build: Any, *, status: int = 200) -> HttpResponse:
    context = {"build": build, "pool": build.snapshot.pool, "slot": f"build-{build.snapshot_id}-{build.format}"}
    return render(request, "trainer_bridge/_build.html", context, status=status)


@login_required
@require_POST
@domain_errors
def build_start(request: HttpRequest, slug: str, digest: str) -> HttpResponse:
    """Build one snapshot's export in the background (or find the build that exists)."""
    _require(request, *VIEWERS)
    snapshot = snapshot_get(pool_slug=slug, digest=digest)
    if not can_read_snapshot(user=request.user, token=None, snapshot=snapshot):
        raise NotFound(f"No snapshot {digest[:12]!r} of pool {slug!r} that you can export.")
    fmt = request.POST.get("format", "")
    gzip = request.POST.get("gzip") == "1" and fmt in export.FORMATS and not export.FORMATS[fmt].self_compressed
    # Signed in, a user holds every token scope, hidden tests included: the same file
    # as the page's streamed download links.
    build, created = build_request(snapshot=snapshot, format=fmt, gzip=gzip, with_hidden_tests=True,
                                   actor=request.user)  # fmt: skip
    if build_needs_worker(build):
        enqueue_build(build)
    if request.htmx:
        return _build_fragment(request, build, status=202 if build.state != "done" else 200)
    messages.success(request, f"{fmt} export of {snapshot.hash[:12]} {'queued' if created else build.state}.")
    return redirect("pools:detail", slug=slug)


@login_required
@require_GET
@domain_errors
def build_progress(request: HttpRequest, slug: str, build_id: Any) -> HttpResponse:
    """The fragment a build's slot polls until it is done or failed."""
    _require(request, *VIEWERS)
    build = build_get(build_id=build_id)
    if build.snapshot.pool.slug != slug or not can_read_snapshot(
        user=request.user, token=None, snapshot=build.snapshot
    ):
        raise NotFound(f"No export build {build_id} of pool {slug!r}.")
    return _build_fragment(request, build)

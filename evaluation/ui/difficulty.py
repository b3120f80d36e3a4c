"""The difficulty dashboard: where each task sits for the solvers on record, what
the catalogue lacks, near-duplicates, and uploading rollouts. Thin: selectors
and services do the work."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from evaluation.difficulty import selectors
from evaluation.difficulty.duplicate_scan import duplicates_scan
from evaluation.difficulty.irt import LEARNABLE, TOO_EASY, TOO_HARD
from evaluation.difficulty.rollouts import samples_ingest, upload_todo
from evaluation.difficulty.samples import SamplesError
from tasks_app.errors import PermissionDenied
from tasks_app.roles import CURATOR, REVIEWER, TRAINER, has_role
from tasks_app.ui.views.common import domain_errors

BANDS = (TOO_EASY, LEARNABLE, TOO_HARD)
MAX_UPLOAD_BYTES = 50 * 1024 * 1024


def _require(request: HttpRequest, *roles: str) -> None:
    if not has_role(request.user, *roles):
        raise PermissionDenied("This needs the " + " or ".join(roles) + " role.")


@login_required
@require_GET
@domain_errors
def dashboard(request: HttpRequest) -> HttpResponse:
    _require(request, CURATOR, REVIEWER, TRAINER)
    solver = request.GET.get("solver") or None
    band = request.GET.get("band", "")
    fit = selectors.latest_fit()
    table, problem = None, ""
    if fit is not None:
        try:
            table = selectors.difficulty_table(solver=solver, fit=fit)
        except ValueError as exc:
            problem, table = str(exc), selectors.difficulty_table(fit=fit)
    rows = table["tasks"] if table else []
    context = {
        "fit": fit,
        "table": table,
        "problem": problem,
        "rows": [r for r in rows if not band or r["band"] == band],
        "band": band if band in BANDS else "",
        "bands": BANDS,
        "solver": solver or "",
        "diversity": selectors.diversity(rows),
        "duplicates": selectors.duplicate_pairs(),
        "fits": selectors.fits_recent(),
        "uploads": selectors.uploads_recent(),
        "pass_at_k": selectors.pass_at_k_rows(solver=request.GET.get("passk_solver", "")),
        "passk_solver": request.GET.get("passk_solver", ""),
        "can_act": has_role(request.user, CURATOR, REVIEWER),
    }
    return render(request, "evaluation/difficulty.html", context)


@login_required
@require_POST
@domain_errors
def upload(request: HttpRequest) -> HttpResponse:
    _require(request, CURATOR, REVIEWER, TRAINER)
    sent = request.FILES.get("file")
    if sent is None:
        messages.error(request, "Choose a samples file (JSONL, or gzipped JSONL) to upload.")
        return redirect("verification:difficulty")
    if sent.size > MAX_UPLOAD_BYTES:
        messages.error(request, f"{sent.name} is {sent.size} bytes; uploads are limited to {MAX_UPLOAD_BYTES}.")
        return redirect("verification:difficulty")
    try:
        ingested = samples_ingest(data=sent.read(), solver=request.POST.get("solver") or None, filename=sent.name,
                                  source="ui", actor=request.user)  # fmt: skip
    except SamplesError as exc:
        messages.error(request, f"{sent.name} was rejected, nothing was stored: {exc}")
        return redirect("verification:difficulty")
    if ingested.repeated:
        messages.info(request, f"{sent.name} was uploaded before (upload {ingested.upload.pk}): nothing added.")
    else:
        from evaluation.tasks import enqueue_attempts

        upload_id, todo = ingested.upload.pk, upload_todo(ingested.upload)
        transaction.on_commit(lambda: enqueue_attempts(upload_id, todo))
        messages.success(
            request,
            f"{ingested.upload.created} attempt(s) queued from {sent.name} ({ingested.skipped} already on "
            "record); difficulty is refitted when they have run.",
        )
    return redirect("verification:difficulty")


@login_required
@require_POST
@domain_errors
def refit(request: HttpRequest) -> HttpResponse:
    _require(request, CURATOR, REVIEWER)
    from evaluation.tasks import fit_difficulty

    transaction.on_commit(lambda: fit_difficulty.delay())
    messages.success(request, "Refit queued: the page shows the new fit once it is done.")
    return redirect("verification:difficulty")


@login_required
@require_POST
@domain_errors
def scan_duplicates(request: HttpRequest) -> HttpResponse:
    _require(request, CURATOR, REVIEWER)
    pairs = duplicates_scan()
    messages.success(request, f"Scanned the catalogue: {len(pairs)} near-duplicate pair(s) flagged.")
    return redirect("verification:difficulty")

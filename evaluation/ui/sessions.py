"""An agent session's page: its transcript step by step (actions, output, files
changed), and its verdict (outcomes, what was dropped and why, the diff) beside its
reward: the evidence a curator reads when a reward looks wrong."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evaluation.verification.sessions.selectors import session_for_page
from tasks_app.ui.views.common import domain_errors


@login_required
@require_GET
@domain_errors
def detail(request: HttpRequest, session_id: str) -> HttpResponse:
    session, steps, forks = session_for_page(user=request.user, session_id=session_id)
    return render(request, "evaluation/session_detail.html", {"session": session, "steps": steps, "forks": forks})

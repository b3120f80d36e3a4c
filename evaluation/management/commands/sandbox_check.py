"""python manage.py sandbox_check [--backend bwrap|docker]: can this host verify anything?

Starts one real sandbox of the backend and runs a correct solution through it
(evaluation/sandbox/probe.py). Exits 0 saying so, or 1 with the reason: `make run`
calls it before serving, so that it never serves a platform whose every verdict
would be `sandbox_error`.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.sandbox.engine import default_backend
from evaluation.sandbox.probe import backend_probe

BACKENDS = ("bwrap", "docker")


class Command(BaseCommand):
    help = "Run a correct solution in one sandbox of the configured backend; exit 1 with the reason if it fails."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--backend", help="bwrap or docker (default: SANDBOX_BACKEND, else bwrap).")

    def handle(self, *args: Any, **options: Any) -> None:
        backend = options["backend"] or default_backend()
        if backend not in BACKENDS:
            raise CommandError(f"Unknown sandbox backend {backend!r}: use one of {', '.join(BACKENDS)}.")
        problem = backend_probe(backend)
        if problem is not None:
            raise CommandError(f"the {backend} sandbox backend cannot run verifications: {problem}")
        self.stdout.write(f"the {backend} sandbox backend runs verifications")

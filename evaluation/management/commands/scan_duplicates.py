"""python manage.py scan_duplicates [--statement-threshold T] [--code-threshold T]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.difficulty.duplicate_scan import duplicates_scan
from evaluation.difficulty.duplicates import CODE_THRESHOLD, STATEMENT_THRESHOLD


class Command(BaseCommand):
    help = "Flag near-duplicate tasks (TF-IDF over statements and normalised reference code, identical tests)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--statement-threshold", type=float, default=STATEMENT_THRESHOLD)
        parser.add_argument("--code-threshold", type=float, default=CODE_THRESHOLD)

    def handle(self, *args: Any, **options: Any) -> None:
        for name in ("statement_threshold", "code_threshold"):
            if not 0 < options[name] <= 1:
                raise CommandError(f"--{name.replace('_', '-')} must be in (0, 1], got {options[name]}")
        pairs = duplicates_scan(
            statement_threshold=options["statement_threshold"], code_threshold=options["code_threshold"]
        )
        for pair in pairs:
            self.stdout.write(
                f"{pair['first']} ~ {pair['second']}: {', '.join(pair['reasons'])} "
                f"(statement {pair['statement_similarity']:.2f}, code {pair['code_similarity']:.2f})"
            )
        self.stdout.write(f"{len(pairs)} near-duplicate pair(s) flagged.")

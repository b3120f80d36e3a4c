"""python manage.py synthesize_repository_tasks (--path DIR | --sdist FILE | --pypi NAME[==VERSION])
[--out FILE | --user USERNAME] [--max-tasks N] [--max-mutants-per-function N] [--seed N] [--hide-failing-tests]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.sandbox.errors import SandboxFailure
from evaluation.verification.synthesis import (
    repository_tasks_synthesize,
    source_tree_read,
    synthesized_tasks_create,
    synthesized_tasks_write,
)
from tasks_app.errors import DomainError


class Command(BaseCommand):
    help = (
        "Make repository tasks from a project with a green pytest suite: each function's mutants run against "
        "the suite in a session sandbox, and every mutant that breaks a test becomes a draft task."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--path", help="A local project folder.")
        source.add_argument("--sdist", help="A local sdist (.tar.gz, .tar or .zip).")
        source.add_argument("--pypi", help="NAME or NAME==VERSION: its sdist is fetched from PyPI (needs network).")
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--out", help="Write the drafts as native JSONL (import_tasks reads it); no rows.")
        target.add_argument("--user", help="Create the drafts as tasks in draft state, authored by this curator.")
        parser.add_argument("--max-tasks", type=int, default=50)
        parser.add_argument("--max-mutants-per-function", type=int, default=3)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--hide-failing-tests", action="store_true", help="Hold the broken tests' files out as hidden tests."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["max_tasks"] < 1 or options["max_mutants_per_function"] < 1:
            raise CommandError("--max-tasks and --max-mutants-per-function must be at least 1.")
        actor = self.actor(options["user"]) if options["user"] else None
        try:
            tree = source_tree_read(path=options["path"], sdist=options["sdist"], pypi=options["pypi"])
            result = repository_tasks_synthesize(
                tree=tree,
                max_tasks=options["max_tasks"],
                max_mutants_per_function=options["max_mutants_per_function"],
                seed=options["seed"],
                hide_failing_tests=options["hide_failing_tests"],
                progress=self.stdout.write,
            )
            if options["out"]:
                written = synthesized_tasks_write(out=Path(options["out"]), drafts=result.drafts)
                self.stdout.write(f"wrote {written} task(s) to {options['out']}")
            else:
                report = synthesized_tasks_create(actor=actor, drafts=result.drafts)
                self.stdout.write(f"created {len(report.created)} task(s), {len(report.existing)} slug(s) taken")
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        except SandboxFailure as exc:
            raise CommandError(f"The sandbox failed (the platform's fault, not the project's): {exc}") from exc
        for path, why in result.skipped_files[:20]:
            self.stdout.write(f"skipped {path}: {why}")
        self.stdout.write(f"{result.project}: {result.tests} tests; {result.counts.line()}")

    def actor(self, username: str) -> Any:
        users = get_user_model()
        try:
            return users.objects.get(**{users.USERNAME_FIELD: username})
        except users.DoesNotExist as exc:
            raise CommandError(f"No user named {username!r}.") from exc

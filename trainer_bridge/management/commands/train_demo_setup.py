"""python manage.py train_demo_setup: what `make train-demo` trains on (development installs only)."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tasks_app.catalogue.demo import CATALOGUE_OWNER, CATALOGUE_REVIEWER
from tasks_app.errors import DomainError
from trainer_bridge.services.demo import AGENTIC_CRITERIA, AGENTIC_POOL, DEMO_CRITERIA, DEMO_POOL, train_demo_setup


class Command(BaseCommand):
    help = (
        "Make sure the demo pool (approved tasks whose verification passed) has a frozen snapshot, waiting for "
        "the worker's verifications, and make a token of the demo trainer for it. The last line on stdout is "
        'one JSON object: {"token", "snapshot", "pool", "tasks"}.'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--pool", help=f"The pool's slug (default: {DEMO_POOL}, or {AGENTIC_POOL} with --agentic).")
        parser.add_argument("--agentic", action="store_true",
                            help="The agentic demo: a pool of repository tasks, run as agent sessions.")  # fmt: skip
        parser.add_argument("--user", default="trainer", help="Whose token (default: the demo user trainer).")
        parser.add_argument("--approve", type=int, default=4,
                            help="Verified tasks to approve when no approved task can enter the pool.")  # fmt: skip
        parser.add_argument("--timeout", type=float, default=900.0,
                            help="Seconds to wait for the worker's verifications of approved tasks.")  # fmt: skip
        parser.add_argument(
            "--force",
            action="store_true",
            help="Run even though the platform is not embedded: it approves tasks as the demo reviewer.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.EMBEDDED and not options["force"]:
            raise CommandError(
                "Refusing to approve tasks and make tokens for the demo users outside an embedded install "
                "(SECRET_KEY is set). Use --force only on a throwaway instance."
            )
        users = get_user_model().objects.in_bulk(
            [CATALOGUE_OWNER, CATALOGUE_REVIEWER, options["user"]], field_name="username"
        )
        missing = [n for n in (CATALOGUE_OWNER, CATALOGUE_REVIEWER, options["user"]) if n not in users]
        if missing:
            raise CommandError(f"No user {', '.join(missing)}: load the demo users first (manage.py seed_demo).")
        try:
            result = train_demo_setup(
                curator=users[CATALOGUE_OWNER], reviewer=users[CATALOGUE_REVIEWER], trainer=users[options["user"]],
                pool_slug=options["pool"] or (AGENTIC_POOL if options["agentic"] else DEMO_POOL),
                criteria=AGENTIC_CRITERIA if options["agentic"] else DEMO_CRITERIA,
                approve=options["approve"], timeout_s=options["timeout"],
                say=lambda line: self.stderr.write(line, style_func=str),
            )  # fmt: skip
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        frozen = "froze" if result.snapshot_created else "found"
        self.stdout.write(f"{frozen} snapshot {result.snapshot[:12]} of pool {result.pool}: {', '.join(result.tasks)}")
        self.stdout.write(json.dumps(result.as_dict()))

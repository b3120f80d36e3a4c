"""python manage.py verify (--all | --task SLUG | --tag TAG) [--wait | --sync] [--force]"""

from __future__ import annotations

import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.management.progress import progress_bar
from evaluation.models import Verification, VerificationState
from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verifications_run
from evaluation.verification.planning import verification_plan
from evaluation.verification.selectors import versions_to_verify


class Command(BaseCommand):
    help = "Verify the latest version of the selected tasks: enqueue (default), wait for it, or run it here."

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--all", action="store_true", help="Every task that is not retired.")
        which.add_argument("--task", metavar="SLUG", help="One task.")
        which.add_argument("--tag", metavar="TAG", help="Every task with this tag.")
        how = parser.add_mutually_exclusive_group()
        how.add_argument("--wait", action="store_true", help="Enqueue, then show progress until done.")
        how.add_argument("--sync", action="store_true", help="Run here, without a broker, on --workers threads.")
        parser.add_argument("--workers", type=int, default=0, help="With --sync: threads (default: the pool size).")
        parser.add_argument("--force", action="store_true", help="Run again even if this configuration has run.")
        parser.add_argument("--repeats", type=int, help="Runs of each solution (default: settings).")
        parser.add_argument("--mutants", type=int, help="Mutants per version, at most (default: settings).")
        parser.add_argument("--timeout", type=float, default=3600.0, help="With --wait: give up after this many s.")

    def handle(self, *args: Any, **options: Any) -> None:
        versions = list(
            versions_to_verify(everything=options["all"], slug=options["task"] or "", tag=options["tag"] or "")
        )
        if not versions:
            raise CommandError("No task matches: check the slug or tag (retired tasks are left out).")
        try:
            config = VerifyConfig.from_settings(repeats=options["repeats"], mutants=options["mutants"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if options["sync"]:
            ids = self.run_here(versions, config, force=options["force"], workers=options["workers"])
        else:
            ids = self.enqueue(versions, force=options["force"], config=config)
            if options["wait"]:
                self.wait(ids, timeout=options["timeout"])
        self.report(ids)

    def enqueue(self, versions: list[Any], *, force: bool, config: VerifyConfig) -> list[int]:
        from evaluation.tasks import enqueue_executions

        ids = []
        for version in versions:  # planned here, so the ids are known; executions go to the queue
            verification, todo = verification_plan(version=version, config=config, force=force)
            enqueue_executions(verification.pk, todo)
            ids.append(verification.pk)
        self.stdout.write(f"Enqueued {len(ids)} verification(s).")
        return ids

    def run_here(self, versions: list[Any], config: VerifyConfig, *, force: bool, workers: int) -> list[int]:
        from evaluation.sandbox.engine import get_pool

        workers = workers or get_pool(config.backend).size
        return verifications_run(versions=versions, config=config, workers=workers, force=force,
                                 progress=self.progress)  # fmt: skip

    def wait(self, ids: list[int], *, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            rows = list(Verification.objects.filter(pk__in=ids).values_list("state", "done", "total"))
            done, total = sum(r[1] for r in rows), sum(r[2] for r in rows)
            self.progress(done, total)
            if all(state in (VerificationState.DONE, VerificationState.INFRASTRUCTURE_ERROR) for state, _, _ in rows):
                return
            if time.monotonic() > deadline:
                raise CommandError(f"Still running after {timeout:.0f} s ({done}/{total} executions).")
            time.sleep(1.0)

    def progress(self, done: int, total: int) -> None:
        progress_bar(getattr(self.stderr, "_out", sys.stderr), done, total, "executions")

    def report(self, ids: list[int]) -> None:
        for verification in (
            Verification.objects.filter(pk__in=ids).select_related("version__task").order_by("version__task__slug")
        ):
            flags = ", ".join(verification.flags.values_list("code", flat=True)) or "-"
            verdict = verification.verdict or verification.get_state_display().lower()
            self.stdout.write(f"{verification.version}: {verdict} [{flags}]")

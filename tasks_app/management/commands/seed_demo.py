"""Create the demo users and load the sample catalogue (development installs only)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tasks_app.catalogue.demo import demo_seed
from tasks_app.errors import DomainError


class Command(BaseCommand):
    help = (
        "Create the demo users (fixed, published passwords) and load the sample catalogue. "
        "Safe to run again: nothing is duplicated and no password is reset."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="Run even though the platform is not embedded. Demo passwords are public: never on production.",
        )

    def handle(self, *args: Any, force: bool = False, **options: Any) -> None:
        if not settings.EMBEDDED and not force:
            raise CommandError(
                "Refusing to create demo users with published passwords outside an embedded install "
                "(SECRET_KEY is set). Use --force only on a throwaway instance."
            )
        try:
            result = demo_seed()
        except DomainError as exc:
            raise CommandError(exc.message) from exc

        rows = [("username", "password", "roles", "status")]
        for user in result.users:
            status = "created" if user.created else "existing (password not changed)"
            rows.append((user.spec.username, user.spec.password, ", ".join(user.roles), status))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            self.stdout.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        for report in (result.catalogue, result.repositories):
            for slug, reason in report.skipped:
                self.stdout.write(f"skipped {slug}: {reason}")
            self.stdout.write(report.summary())

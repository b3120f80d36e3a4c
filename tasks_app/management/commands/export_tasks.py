"""python manage.py export_tasks [--output PATH] [--state STATE] [--tag TAG]"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tasks_app.importers import tasks_export
from tasks_app.models import State, Task


class Command(BaseCommand):
    help = "Export tasks (each one's newest version) as native-format JSONL, which import_tasks reads back."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", "-o", help="The file to write. Default: standard output.")
        parser.add_argument("--state", choices=State.values, help="Only tasks in this lifecycle state.")
        parser.add_argument("--tag", help="Only tasks with this tag.")

    def handle(self, *args: Any, **options: Any) -> None:
        tasks = Task.objects.all()
        if options.get("state"):
            tasks = tasks.filter(state=options["state"])
        if options.get("tag"):
            tasks = tasks.filter(tags__name=options["tag"].strip().lower())
        lines = tasks_export(queryset=tasks)
        output = options.get("output")
        count = self.write_file(Path(output), lines) if output else self.write_stdout(lines)
        self.stderr.write(f"Exported {count} task(s).")

    def write_stdout(self, lines: Iterator[str]) -> int:
        try:
            return write_counted(lines, lambda line: self.stdout.write(line, ending=""))
        except BrokenPipeError:
            # The reader stopped early (`export_tasks | head`): exit quietly, as
            # Python's docs advise, pointing stdout at devnull so the final flush
            # at exit does not raise again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise SystemExit(1) from None

    def write_file(self, path: Path, lines: Iterator[str]) -> int:
        # Write beside the target and rename, so a failed export never leaves half a file.
        partial = path.with_name(f".{path.name}.partial")
        try:
            with partial.open("w", encoding="utf-8", newline="\n") as handle:
                count = write_counted(lines, handle.write)
            partial.replace(path)
        except OSError as exc:
            raise CommandError(f"Cannot write {path}: {exc.strerror or exc}") from exc
        finally:
            partial.unlink(missing_ok=True)
        return count


def write_counted(lines: Iterable[str], write: Callable[[str], object]) -> int:
    """Write every line; return how many there were (the export is streamed, so it cannot be counted first)."""
    count = 0
    for line in lines:
        write(line)
        count += 1
    return count

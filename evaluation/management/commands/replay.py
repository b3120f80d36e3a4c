"""python manage.py replay DIGEST [--backend bwrap|docker]: run a recorded request again.

The log line of every execution names its `request_digest`; the request itself was
kept under that digest (evaluation/sandbox/replay.py). This loads it, checks it
against its digest, runs it once more in a cold sandbox and prints the result as
JSON, beside which the runtime fingerprint and harness version of the logged run
can be compared. Exits 2 when no intact request is kept under the digest.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.sandbox import engine
from evaluation.sandbox.replay import NotRecorded, load


class Command(BaseCommand):
    help = "Run a recorded request again and print its result as JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("digest", help="the request_digest of an execution's log line")
        parser.add_argument("--backend", choices=("bwrap", "docker"), default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            request = load(options["digest"])
        except NotRecorded as exc:
            raise CommandError(str(exc), returncode=2) from None
        try:
            result = engine.run(request, backend=options["backend"], warm=False)
        finally:
            engine.close_pools()
        self.stdout.write(json.dumps(result.as_dict(), indent=2, sort_keys=True))

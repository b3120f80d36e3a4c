"""python manage.py fit_difficulty [--bootstrap B] [--seed S] [--regularisation R] [--solver NAME]"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.difficulty.ability import target_ability
from evaluation.difficulty.fits import difficulty_bands, difficulty_fit_create


class Command(BaseCommand):
    help = "Fit task difficulty and solver ability (1PL item response) to every counted attempt, and keep the fit."

    def add_arguments(self, parser: CommandParser) -> None:
        options = getattr(settings, "DIFFICULTY", {})
        parser.add_argument("--bootstrap", type=int, default=options.get("BOOTSTRAP", 100), help="Refits.")
        parser.add_argument("--seed", type=int, default=options.get("SEED", 0))
        parser.add_argument("--regularisation", type=float, default=options.get("REGULARISATION", 1.0))
        parser.add_argument("--solver", help="Bands relative to this solver's ability (default: the median solver).")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["bootstrap"] < 0:
            raise CommandError("--bootstrap must be 0 or more")
        if not options["regularisation"] > 0:
            raise CommandError("--regularisation must be above 0")
        fit = difficulty_fit_create(
            regularisation=options["regularisation"], bootstrap=options["bootstrap"], seed=options["seed"]
        )
        if fit.state != "done":
            raise CommandError(f"fit {fit.pk} failed: {fit.error}")
        try:
            ability, against = target_ability(fit, options["solver"])
            bands = difficulty_bands(fit, solver=options["solver"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        counts: dict[str, int] = {}
        for band in bands.values():
            counts[band["band"]] = counts.get(band["band"], 0) + 1
        self.stdout.write(
            f"Fit {fit.pk}: {fit.tasks} task(s), {fit.solvers} solver(s), {fit.attempts} attempt(s), "
            f"log loss {fit.log_loss:.4f}, data {fit.data_digest[:12]}."
        )
        self.stdout.write(f"Bands against {against} (ability {ability:+.2f}): " +
                          ", ".join(f"{name} {n}" for name, n in sorted(counts.items())))  # fmt: skip

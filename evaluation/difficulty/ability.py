"""What the bands are read against: the target solver's ability, and how many
attempts make a difficulty measured rather than predicted. Shared by the fits and
the pages, which is why it lives apart from both."""

from __future__ import annotations

import statistics
from typing import Any

# A task's difficulty is shown as measured once this many attempts went into it;
# with fewer (or none) the predictor's figure is shown, marked as predicted.
MIN_MEASURED_ATTEMPTS = 5


def target_ability(fit: Any, solver: str | None = None) -> tuple[float, str]:
    """The ability bands are read against: the named solver's, else the median
    solver's. Returns (ability, what it is)."""
    if solver:
        if solver not in fit.abilities:
            raise ValueError(f"solver {solver!r} is not in fit {fit.pk}; it has {', '.join(sorted(fit.abilities))}")
        return float(fit.abilities[solver]["value"]), f"solver {solver}"
    if not fit.abilities:
        raise ValueError(f"fit {fit.pk} has no solvers")
    return statistics.median(float(a["value"]) for a in fit.abilities.values()), "the median solver"

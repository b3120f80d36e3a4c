"""What a pool selects, checked: every field's problem is named, nothing is guessed."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tasks_app.errors import ValidationFailed
from tasks_app.languages import LANGUAGES

BANDS = ("TOO_EASY", "LEARNABLE", "TOO_HARD", "unknown")
EXCLUDABLE_FLAGS = ("HACKABLE", "DUPLICATE", "WEAK_TESTS", "FLAKY", "REFERENCE_FAILS", "TOO_EASY", "TOO_HARD")
FIELDS = {
    "require_verified", "max_reward_noise", "bands", "difficulty_min", "difficulty_max", "tags_include",
    "tags_exclude", "exclude_flags", "max_size", "stratify", "seed", "languages",
}  # fmt: skip


@dataclass(frozen=True)
class PoolCriteria:
    """Approved tasks only, always; then:
    - require_verified: the approved version's latest verification verdict is `verified`
      (not flagged and waived);
    - max_reward_noise: its reward-noise estimate is at most this (unknown noise fails);
    - bands: its difficulty band is one of these ("unknown": no difficulty yet);
    - difficulty_min / difficulty_max: its difficulty lies in the range (unknown fails);
    - tags_include (any of) / tags_exclude (none of);
    - languages: the solutions' language is one of these (any when empty);
    - exclude_flags: none of these flags on the version's verification or the task
      (HACKABLE and DUPLICATE by default);
    - max_size: at most this many, sampled with `seed`, stratified by band and first
      tag when `stratify`."""

    require_verified: bool = False
    max_reward_noise: float | None = None
    bands: tuple[str, ...] = ()
    difficulty_min: float | None = None
    difficulty_max: float | None = None
    tags_include: tuple[str, ...] = ()
    tags_exclude: tuple[str, ...] = ()
    exclude_flags: tuple[str, ...] = ("HACKABLE", "DUPLICATE")
    max_size: int | None = None
    stratify: bool = True
    seed: int = 0
    languages: tuple[str, ...] = ()

    @classmethod
    def parse(cls, data: Any) -> PoolCriteria:
        """Criteria from plain data (a pool's JSON, a form, an API body); ValidationFailed
        names each bad field."""
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ValidationFailed("Pool criteria must be an object.", details={"criteria": ["Expected an object."]})
        problems: dict[str, list[str]] = {}
        unknown = sorted(set(data) - FIELDS)
        if unknown:
            problems["criteria"] = [f"Unknown field(s): {', '.join(unknown)}."]
        values: dict[str, Any] = {}

        def number(name: str, *, low: float | None = None, high: float | None = None) -> None:
            value = data.get(name)
            if value is None or value == "":
                return
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                try:
                    value = float(value)
                except (TypeError, ValueError):
                    problems[name] = ["Expected a number."]
                    return
            if (low is not None and value < low) or (high is not None and value > high):
                problems[name] = [
                    f"Expected a number from {low} to {high}." if high is not None else f"Expected >= {low}."
                ]
                return
            values[name] = float(value)

        def names(name: str, allowed: tuple[str, ...] | None = None) -> None:
            value = data.get(name) or []
            if isinstance(value, str):
                value = [v for v in (p.strip() for p in value.split(",")) if v]
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                problems[name] = ["Expected a list of names."]
                return
            bad = [v for v in value if allowed is not None and v not in allowed]
            if bad:
                problems[name] = [f"Unknown: {', '.join(bad)}; one of {', '.join(allowed or ())}."]
                return
            values[name] = tuple(dict.fromkeys(value))

        for flag in ("require_verified", "stratify"):
            value = data.get(flag)
            if value is not None:
                if not isinstance(value, bool):
                    problems[flag] = ["Expected true or false."]
                else:
                    values[flag] = value
        number("max_reward_noise", low=0.0, high=1.0)
        number("difficulty_min")
        number("difficulty_max")
        names("bands", BANDS)
        names("tags_include")
        names("tags_exclude")
        names("languages", LANGUAGES)
        if "exclude_flags" in data:
            names("exclude_flags", EXCLUDABLE_FLAGS)
        for name in ("max_size", "seed"):
            value = data.get(name)
            if value is None or value == "":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if name == "max_size" else 0):
                problems[name] = ["Expected a whole number of at least 1." if name == "max_size"
                                  else "Expected a whole number of at least 0."]  # fmt: skip
            else:
                values[name] = value
        low, high = values.get("difficulty_min"), values.get("difficulty_max")
        if low is not None and high is not None and low > high:
            problems["difficulty_min"] = [f"{low} is above difficulty_max {high}."]
        if problems:
            raise ValidationFailed("The pool criteria are not valid.", details=problems)
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if not out["languages"]:  # only when set: the criteria of every earlier pool read as they did
            del out["languages"]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

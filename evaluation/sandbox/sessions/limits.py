"""What a session may use: per step, per episode, and how long it may sit idle."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any


class LimitsInvalid(ValueError):
    """A limit asked for is not a number, or is outside what the host allows; the
    message names the field."""


@dataclass(frozen=True)
class SessionLimits:
    # per step
    step_timeout_s: float = 30.0
    step_cpu_s: float = 30.0
    step_memory_mb: int = 1024
    step_processes: int = 128
    step_output_bytes: int = 16 * 1024
    file_bytes: int = 8 * 1024 * 1024
    # per episode
    max_steps: int = 100
    episode_wall_s: float = 1800.0
    idle_timeout_s: float = 300.0
    lease_s: float = 600.0
    tree_bytes: int = 256 * 1024 * 1024  # the session tmpfs: the tree and all it writes

    def step_limits(self) -> dict[str, Any]:
        """The rlimits the supervisor applies to a step's first process."""
        return {"cpu_s": self.step_cpu_s, "memory_mb": self.step_memory_mb, "processes": self.step_processes,
                "output_bytes": self.step_output_bytes, "file_bytes": self.file_bytes}  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# The most a caller may ask for; a host can lower them in its settings.
CEILINGS = SessionLimits(step_timeout_s=600.0, step_cpu_s=600.0, step_memory_mb=8192, step_processes=1024,
                         step_output_bytes=1024 * 1024, file_bytes=64 * 1024 * 1024, max_steps=1000,
                         episode_wall_s=6 * 3600.0, idle_timeout_s=3600.0, lease_s=3600.0,
                         tree_bytes=2 * 1024 * 1024 * 1024)  # fmt: skip


def limits_from(data: Any, *, base: SessionLimits | None = None, ceilings: SessionLimits = CEILINGS) -> SessionLimits:
    """`base` with the fields of `data` (a dict) over it, each checked: every bad field is
    named in one error."""
    base = base or SessionLimits()
    if data is None:
        return base
    if not isinstance(data, dict):
        raise LimitsInvalid("limits: expected an object of limit names to numbers")
    known = {f.name: f for f in fields(SessionLimits)}
    errors, values = [], {}
    for name, value in data.items():
        if name not in known:
            errors.append(f"limits.{name}: unknown limit (known: {', '.join(sorted(known))})")
            continue
        kind = int if known[name].type in ("int", int) else float
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
            errors.append(f"limits.{name}: expected {'an integer' if kind is int else 'a number'}, got {value!r}")
            continue
        ceiling = getattr(ceilings, name)
        if not 0 < value <= ceiling:
            errors.append(f"limits.{name}: {value} is outside (0, {ceiling}]")
            continue
        values[name] = kind(value)
    if errors:
        raise LimitsInvalid("; ".join(errors))
    return replace(base, **values)

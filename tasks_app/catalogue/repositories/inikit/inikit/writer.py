"""Turning a Config back into text that `parse` reads as the same Config."""

from __future__ import annotations

from inikit.config import Config


def _value_lines(value: str) -> list[str]:
    first, *rest = value.split("\n")
    return [first] + ["    " + line for line in rest]


def dump(config: Config, *, separator: str = " = ") -> str:
    """Sections in order, a blank line between them; the default section first, unheaded."""
    blocks = []
    for section in config.sections():
        lines = [] if section == "default" else [f"[{section}]"]
        for key in config.options(section):
            first, *more = _value_lines(config.get(section, key))
            lines.append(f"{key}{separator}{first}")
            lines.extend(more)
        if lines:
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n" if blocks else ""

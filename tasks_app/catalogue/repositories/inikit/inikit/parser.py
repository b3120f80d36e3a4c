"""Turning text into a Config, line by line."""

from __future__ import annotations

from inikit.config import Config

COMMENT_PREFIXES = ("#", ";")


class ParseError(ValueError):
    """A line that cannot be read; `line` is its number, from 1."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


def _split_pair(line: str, number: int) -> tuple[str, str]:
    positions = [p for p in (line.find("="), line.find(":")) if p >= 0]
    if not positions:
        raise ParseError(number, f"expected 'key = value', got {line.strip()!r}")
    cut = min(positions)
    key = line[:cut].strip().lower()
    if not key:
        raise ParseError(number, "a key may not be empty")
    return key, line[cut + 1 :].strip()


def _strip_inline_comment(value: str) -> str:
    for prefix in COMMENT_PREFIXES:
        marker = value.find(" " + prefix)
        if marker >= 0:
            value = value[:marker]
    return value.rstrip()


def parse(text: str) -> Config:
    """Read `text`; options before any section header belong to the section "default"."""
    config = Config()
    section = "default"
    key = None
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith(COMMENT_PREFIXES):
            continue
        if raw[0] in " \t" and key is not None:
            previous = config.get(section, key)
            config.set(section, key, previous + "\n" + _strip_inline_comment(stripped))
            continue
        if stripped.startswith("["):
            if not stripped.endswith("]"):
                raise ParseError(number, "a section header must end with ']'")
            section = stripped[1:-1].strip().lower()
            if not section:
                raise ParseError(number, "a section name may not be empty")
            config.add_section(section)
            key = None
            continue
        key, value = _split_pair(stripped, number)
        if config.has(section, key):
            raise ParseError(number, f"duplicate key {key!r} in section {section!r}")
        config.set(section, key, _strip_inline_comment(value))
    return config

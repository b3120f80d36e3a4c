"""The mutant record: what the engine hands back for one single-change mutant."""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    family: str
    description: str
    line: int
    source: str
    digest: str

    def diff(self, reference: str) -> str:
        """Unified diff from the reference source to this mutant."""
        lines = difflib.unified_diff(
            _lines(reference), _lines(self.source), fromfile="reference.py", tofile="mutant.py"
        )
        return "".join(lines)


def _lines(text: str) -> list[str]:
    # difflib glues a last line without a newline onto the next hunk line.
    return [line if line.endswith("\n") else line + "\n" for line in text.splitlines(keepends=True)]

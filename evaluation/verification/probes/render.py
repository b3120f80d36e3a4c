"""Rendering probe programs: the Probe record, and the code of a probe built from its
template files (templates/<family>/<name>.py.tmpl) with the task's values filled in.

The templates are `string.Template` text: `$ep` is the entry point and `$base` a builtin
type name, both checked identifiers spliced in raw; every other `$name` is the repr() of
a value, so no task text is ever spliced in raw.
"""

from __future__ import annotations

import keyword
import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

TEMPLATES = Path(__file__).resolve().parent / "templates"


@dataclass(frozen=True)
class Probe:
    name: str  # snake_case, stable across versions: metrics and flags group by it
    description: str  # one sentence for a curator: the hack it tries
    code: str  # the candidate's source


@cache
def template(name: str) -> str:
    """The text of templates/<name>.py.tmpl, without its surrounding blank lines."""
    return (TEMPLATES / f"{name}.py.tmpl").read_text(encoding="utf-8").strip("\n")


def render(*names: str, ep: str = "", base: str = "", **values: Any) -> str:
    """The code of the named templates joined by two blank lines, with `$ep` and `$base`
    (checked identifiers) spliced in raw and every other `$name` as the repr() of its value."""
    for raw in (ep, base):
        if raw and (not raw.isidentifier() or keyword.iskeyword(raw)):
            raise ValueError(f"{raw!r} is not a Python identifier")
    text = "\n\n\n".join(template(name) for name in names) + "\n"
    literals = {name: repr(value) for name, value in values.items()}
    return string.Template(text).substitute(ep=ep, base=base, **literals)


def probe(name: str, description: str, *templates: str, **values: Any) -> Probe:
    """A probe whose code renders `templates` (names under templates/) with `values`."""
    return Probe(name, description, render(*templates, **values))

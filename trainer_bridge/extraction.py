"""The code in a model's completion, as the reward API runs it.

Policies answer in Markdown: reasoning, perhaps an example, then the solution.
The rule, in order:

1. the last fenced block tagged as the task's language (for Python ```python, ```py,
   ```python3; for the others the fences evaluation/sandbox/languages.py lists:
   ```cpp or ```c++ for C++, ```java, ```go, ...);
2. else the last fenced block with any other tag or none;
3. else the whole completion, as it is (a bare program, or a body).

The last block rather than the first, because a model that shows a usage
example or a failing attempt before its answer ends with the answer. A fence
left open at the end (a generation cut off by its token limit) runs to the end
of the text. Fences are three or more backticks or tildes at the start of a
line (up to three spaces of indent, as CommonMark allows), closed by a fence
of the same character at least as long.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evaluation.sandbox import languages

_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
_PYTHON_TAGS = {"python", "py", "python3", "py3"}


@dataclass(frozen=True)
class Block:
    info: str  # the fence's info string: its first word is the language
    body: str
    closed: bool

    @property
    def language(self) -> str:
        return self.info.split()[0].lower() if self.info.split() else ""


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced code block of `text`, in order."""
    blocks: list[Block] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        opened = _OPEN.match(lines[i].rstrip("\r"))
        if opened is None:
            i += 1
            continue
        fence = opened.group("fence")
        body: list[str] = []
        i += 1
        closed = False
        while i < len(lines):
            line = lines[i].rstrip("\r")
            stripped = line.lstrip(" ")
            indent_ok = len(line) - len(stripped) <= 3
            # A closing fence: the same character, at least as long, and nothing else on the line.
            if indent_ok and stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]).strip():
                closed = True
                i += 1
                break
            body.append(lines[i])
            i += 1
        blocks.append(Block(info=opened.group("info").strip(), body="\n".join(body), closed=closed))
    return blocks


def extract_code(completion: str, language: str = "python") -> str:
    """The code to run from `completion` (see the module docstring for the rule)."""
    tags = _PYTHON_TAGS if language == "python" else set(languages.language(language).fences)
    blocks = [b for b in fenced_blocks(completion) if b.body.strip()]
    tagged = [b for b in blocks if b.language in tags]
    chosen = tagged[-1] if tagged else (blocks[-1] if blocks else None)
    if chosen is None:
        return completion
    return chosen.body if chosen.body.endswith("\n") else chosen.body + "\n"

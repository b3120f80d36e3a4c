"""What a patch changes: the lines of each patched file it adds or removes next to, and
the functions those lines fall in, as line ranges of the patched file.

Mutants of a repository task are made only inside these ranges: the patch is the
task's answer, and whether the tests pin it down is what mutants of the changed
functions measure. The rest of a file was never the task's subject.
"""

from __future__ import annotations

import ast
import re
import warnings

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def changed_lines(hunks: str) -> set[int]:
    """Lines of the new file a diff without context (`-U0`) touches: each added line,
    and for a hunk that only removes, the lines on either side of the cut."""
    lines: set[int] = set()
    for match in HUNK.finditer(hunks):
        start, count = int(match.group(1)), int(match.group(2) if match.group(2) is not None else 1)
        if count:
            lines.update(range(start, start + count))
        else:  # removed after line `start` of the new file
            lines.update(line for line in (start, start + 1) if line >= 1)
    return lines


def _span(node: ast.AST) -> tuple[int, int]:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return first, node.end_lineno or node.lineno


def changed_ranges(source: str, lines: set[int]) -> list[tuple[int, int]]:
    """The (first, last) line ranges of what `lines` change in `source`: for a line inside
    a function, the innermost function holding it; outside any function, the innermost
    statement holding it (a class attribute, a module constant). Lines between
    statements (blank lines, comments at the top level) change nothing a mutant could.
    Sorted, overlapping ranges merged; [] when the source does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    functions = [_span(node) for node in ast.walk(tree) if isinstance(node, FUNCTIONS)]
    statements = [_span(node) for node in ast.walk(tree) if isinstance(node, ast.stmt)]
    found: set[tuple[int, int]] = set()
    for line in lines:
        for spans in (functions, statements):
            holding = [span for span in spans if span[0] <= line <= span[1]]
            if holding:
                found.add(min(holding, key=lambda span: span[1] - span[0]))
                break
    merged: list[tuple[int, int]] = []
    for first, last in sorted(found):
        if merged and first <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged

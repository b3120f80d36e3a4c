"""Building one mutant: a site applied to the reference, spliced into its text, and checked.

The builder mutates its one parsed tree in place and puts the node back after, so
a mutant costs an unparse, not a deep copy of the module. The mutant's text is the
reference's with only the changed span rewritten where that parses to the same
tree, so a curator's diff shows the one changed line.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import warnings
from collections.abc import Iterator

from evaluation.verification.mutants.record import Mutant
from evaluation.verification.mutants.sites import Replacement, Site, Step, locate, put


def digest(dump: str) -> str:
    return hashlib.sha256(dump.encode("utf-8")).hexdigest()


class Builder:
    """Applies one site to the reference and checks the result."""

    def __init__(self, source: str, tree: ast.Module) -> None:
        self.tree = tree
        self.original_digest = digest(ast.dump(ast.parse(ast.unparse(tree))))
        self.raw = source.encode("utf-8")
        # ast columns count UTF-8 bytes, so the splice works on bytes; bytes.splitlines breaks where Python does.
        self.starts = [0]
        for line in self.raw.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def build(self, site: Site) -> Mutant | None:
        parent = locate(self.tree, site.path[:-1])
        target = locate(parent, site.path[-1:])
        replacement = site.transform(copy.deepcopy(target))
        try:
            text = self._unparse_with(parent, site.path[-1], target, replacement)
            dump = ast.dump(ast.parse(text))
        except (SyntaxError, ValueError, RecursionError):
            return None
        mutant_digest = digest(dump)
        if mutant_digest == self.original_digest:
            return None
        text = self._splice(target, replacement, dump) or text + "\n"
        if not compiles(text):
            return None
        return Mutant(site.family, site.description, site.line, text, mutant_digest)

    def _unparse_with(self, parent: ast.AST, step: Step, target: ast.AST, replacement: Replacement) -> str:
        # Swapping the one node in and out costs far less than a deep copy of the module per mutant.
        put(parent, step, replacement)
        try:
            return ast.unparse(self.tree)
        finally:
            put(parent, step, target, len(replacement) if isinstance(replacement, list) else 1)

    def _splice(self, target: ast.AST, replacement: Replacement, dump: str) -> str | None:
        """The reference text with only the target's span rewritten, if that parses to the mutant."""
        if getattr(target, "end_lineno", None) is None:
            return None
        start = self.starts[target.lineno - 1] + target.col_offset
        end = self.starts[target.end_lineno - 1] + target.end_col_offset
        for piece, start_at, end_at in self._pieces(target, replacement, start, end):
            text = (self.raw[:start_at] + piece + self.raw[end_at:]).decode("utf-8", errors="replace")
            try:
                if ast.dump(ast.parse(text)) == dump:
                    return text
            except (SyntaxError, ValueError):
                continue
        return None

    def _pieces(
        self, target: ast.AST, replacement: Replacement, start: int, end: int
    ) -> Iterator[tuple[bytes, int, int]]:
        if isinstance(replacement, list):
            # A deleted statement goes with its whole lines; a dropped `elif` with its header and body,
            # leaving the rest of the chain in place.
            last = target.body[-1].end_lineno if replacement else target.end_lineno
            yield b"", self.starts[target.lineno - 1], self.starts[last]
            yield b"", start, end
            return
        line_start = self.starts[target.lineno - 1]
        indent = self.raw[line_start:start]
        text = ast.unparse(replacement).encode("utf-8")
        if isinstance(target, ast.stmt):
            text = text.replace(b"\n", b"\n" + indent if indent.isspace() else b"\n")
            if isinstance(target, ast.If) and self.raw[start:].startswith(b"elif"):
                text = b"el" + text
        yield text, start, end
        yield b"(" + text + b")", start, end


def compiles(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a SyntaxWarning must not become an error under -W error
            compile(text, "mutant.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True

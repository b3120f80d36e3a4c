"""Token-level mutants of programs in the other languages than Python, where there is
no Python tree to walk: C, C++, Java, C#, JavaScript, TypeScript, Go, Rust, PHP, Ruby
and Lua.

The source is read as a stream of tokens (comments, string and character literals,
preprocessor, import and `require` lines are skipped, never changed), and a mutant
changes one token, or wraps one `if` condition:
- `relational`: `<` and `<=`, `>` and `>=`, `==` and `!=` (`===` and `!==`; Lua's `~=`) swapped;
- `logical`: `&&` and `||` (Lua's `and` and `or`) swapped;
- `arithmetic`: a binary `+` and `-` swapped;
- `constant`: a decimal integer literal made one more, or one less;
- `branch`: an `if` condition negated, so the branches swap (`if (!(c))`, Go's and
  Rust's `if !(c) {`, Ruby's `if !(c)`, Lua's `if not (c) then`).
An operator is changed only where spaces stand on both sides of it (`a < b`, not
`vector<int>` or `x->y`), so that a generic, a template or an arrow is left alone.
A mutant that does not compile all the same is `compile_error` when run, and the
mutation score leaves it out: it is no program, killed by no test (figures.py).
"""

from __future__ import annotations

import bisect
import hashlib
import random
import re
from dataclasses import dataclass

from evaluation.verification.mutants.generation import round_robin
from evaluation.verification.mutants.record import Mutant

TOKEN_LANGUAGES = ("c", "cpp17", "cpp20", "java", "csharp", "javascript", "typescript", "go", "rust", "php", "ruby",
                   "lua")  # fmt: skip
TOKEN_FAMILIES = ("relational", "logical", "arithmetic", "constant", "branch")
SWAPS = {
    "relational": {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "===": "!==", "!==": "==="},
    "logical": {"&&": "||", "||": "&&"},
    "arithmetic": {"+": "-", "-": "+"},
}
# Lua's own: `~=` is its "not equal", `and` and `or` its logical operators.
LUA_SWAPS = {
    "relational": {**SWAPS["relational"], "==": "~=", "~=": "=="},
    "logical": {"and": "or", "or": "and"},
    "arithmetic": SWAPS["arithmetic"],
}
_OPERATOR = re.compile(r"===|!==|<=|>=|==|!=|~=|&&|\|\||<<|>>|->|=>|\+\+|--|\+=|-=|[<>+\-]|\band\b|\bor\b")
_NUMBER = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
# Lines never changed: the preprocessor, imports, packages and requires (a changed
# header name or import is no mutant of the logic).
_SKIPPED_LINE = re.compile(r"^\s*(#|import\b|package\b|using\b|require\b|use\b|extern\b)")
# How each language writes a comment: "//" and "/* */" unless named here.
_COMMENTS = {"ruby": ("#",), "lua": ("--",), "php": ("//", "/*", "#")}


@dataclass(frozen=True)
class _Site:
    family: str
    start: int
    end: int
    replacement: str
    line: int
    description: str


def generate_token_mutants(source: str, *, language: str, seed: int = 0, limit: int = 30) -> list[Mutant]:
    """Up to `limit` distinct single-change mutants of `source`, a program in `language`
    (one of TOKEN_LANGUAGES); families taken in turns, in a seeded order."""
    if language not in TOKEN_LANGUAGES:
        raise ValueError(f"no token mutants for {language!r}: only {', '.join(TOKEN_LANGUAGES)}")
    code = _code_mask(source, language)
    sites: dict[str, list[_Site]] = {family: [] for family in TOKEN_FAMILIES}
    swaps = LUA_SWAPS if language == "lua" else SWAPS
    lines = _Lines(source)
    found = (_operator_sites(source, code, swaps, lines) + _constant_sites(source, code, lines)
             + _branch_sites(source, code, language, lines))  # fmt: skip
    for site in found:
        sites[site.family].append(site)
    rng = random.Random(seed)  # noqa: S311 - reproducible selection, not cryptography
    order = list(TOKEN_FAMILIES)
    rng.shuffle(order)
    for family in order:
        rng.shuffle(sites[family])
    return round_robin(order, {family: iter(sites[family]) for family in order}, _TokenBuilder(source), limit)


class _TokenBuilder:
    """A site applied to the source's text: the mutant (round_robin's builder)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.original_digest = _digest(source)

    def build(self, site: _Site) -> Mutant:
        text = self.source[: site.start] + site.replacement + self.source[site.end :]
        return Mutant(site.family, site.description, site.line, text, _digest(text))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _code_mask(source: str, language: str = "c") -> list[bool]:
    """For each character: True where it is code, False inside a comment, a string or
    character literal, or a skipped line."""
    comments = _COMMENTS.get(language, ("//", "/*"))
    mask = [True] * len(source)
    i, n = 0, len(source)
    line_start = True
    while i < n:
        if line_start:
            end = source.find("\n", i)
            end = n if end < 0 else end
            if _SKIPPED_LINE.match(source, i):
                for k in range(i, end):
                    mask[k] = False
                i = end
                continue
            line_start = False
        char = source[i]
        if char == "\n":
            line_start = True
            i += 1
        elif "--" in comments and source.startswith("--[[", i):
            end = source.find("]]", i + 4)
            i = _blank(mask, i, n if end < 0 else end + 2)
        elif any(source.startswith(mark, i) for mark in comments if mark != "/*"):
            end = source.find("\n", i)
            i = _blank(mask, i, n if end < 0 else end)
        elif "/*" in comments and source.startswith("/*", i):
            end = source.find("*/", i + 2)
            i = _blank(mask, i, n if end < 0 else end + 2)
        elif char == "'" and language == "rust" and not _rust_char(source, i):
            i += 1  # a lifetime or a label ('a), not a character literal
        elif char in "\"'`":
            j = i + 1
            while j < n and source[j] != char:
                j += 2 if source[j] == "\\" and char != "`" else 1
            i = _blank(mask, i, min(n, j + 1))
        else:
            i += 1
    return mask


def _rust_char(source: str, i: int) -> bool:
    """Whether the quote at `i` opens a Rust character literal ('x', '\\n') rather than a lifetime."""
    return source.startswith("\\", i + 1) or source.startswith("'", i + 2)


def _blank(mask: list[bool], start: int, end: int) -> int:
    for k in range(start, end):
        mask[k] = False
    return end


class _Lines:
    """1-based line numbers of positions in a source, from one index of its line starts
    (counting newlines from the start for every site cost quadratic time on a large file)."""

    def __init__(self, source: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", source)]

    def of(self, index: int) -> int:
        return bisect.bisect_right(self.starts, index)


def _spaced(source: str, start: int, end: int) -> bool:
    return start > 0 and end < len(source) and source[start - 1] in " \t" and source[end] in " \t"


def _operator_sites(source: str, code: list[bool], families: dict[str, dict[str, str]], lines: _Lines) -> list[_Site]:
    found = []
    for match in _OPERATOR.finditer(source):
        start, end, token = match.start(), match.end(), match.group()
        if not code[start] or not _spaced(source, start, end):
            continue
        for family, swaps in families.items():
            if token in swaps:
                line = lines.of(start)
                found.append(_Site(family, start, end, swaps[token], line,
                                   f"line {line}: `{token}` became `{swaps[token]}`"))  # fmt: skip
    return found


def _constant_sites(source: str, code: list[bool], lines: _Lines) -> list[_Site]:
    found = []
    for match in _NUMBER.finditer(source):
        start, end, digits = match.start(), match.end(), match.group(1)
        if not code[start] or len(digits) > 18 or (len(digits) > 1 and digits.startswith("0")):
            continue  # octal-looking or too long to change safely
        value = int(digits)
        line = lines.of(start)
        for changed in (value + 1, value - 1):
            if changed >= 0:
                found.append(_Site("constant", start, end, str(changed), line,
                                   f"line {line}: the constant {value} became {changed}"))  # fmt: skip
    return found


def _branch_sites(source: str, code: list[bool], language: str, lines: _Lines) -> list[_Site]:
    found = []
    for match in re.finditer(r"\bif\b", source):
        start = match.start()
        if not code[start]:
            continue
        if language in ("go", "rust"):
            site = _braced_condition(source, code, match.end())
        elif language in ("ruby", "lua"):
            site = _line_condition(source, code, match.end(), "then" if language == "lua" else "")
        else:
            site = _parenthesised_condition(source, code, match.end())
        if site is None:
            continue
        open_at, close_at = site
        inner = source[open_at:close_at]
        if language == "rust" and inner.strip().startswith("let "):
            continue  # `if let` binds a pattern: there is no condition to negate
        line = lines.of(start)
        negation = "not " if language == "lua" else "!"
        if language in ("go", "rust", "ruby", "lua"):  # no parentheses of its own: keep the spaces around it
            lead, trail = inner[: len(inner) - len(inner.lstrip())], inner[len(inner.rstrip()) :]
            replacement = f"{lead}{negation}({inner.strip()}){trail}"
        else:
            replacement = f"!({inner})"
        found.append(_Site("branch", open_at, close_at, replacement, line,
                           f"line {line}: the condition of `if` was negated"))  # fmt: skip
    return found


def _parenthesised_condition(source: str, code: list[bool], after: int) -> tuple[int, int] | None:
    """The span inside `if ( ... )`: from after the `(` to its matching `)`."""
    i = after
    while i < len(source) and source[i] in " \t":
        i += 1
    if i >= len(source) or source[i] != "(":
        return None
    depth, j = 0, i
    while j < len(source):
        if code[j]:
            if source[j] == "(":
                depth += 1
            elif source[j] == ")":
                depth -= 1
                if depth == 0:
                    return (i + 1, j) if j > i + 1 else None
        j += 1
    return None


def _line_condition(source: str, code: list[bool], after: int, closer: str) -> tuple[int, int] | None:
    """The span of Ruby's `if cond` (to the end of the line, or a `then`) or Lua's
    `if cond then`: where the condition fits on its line."""
    end = source.find("\n", after)
    end = len(source) if end < 0 else end
    while end > after and not code[end - 1]:
        end -= 1  # a comment at the line's end
    text = source[after:end]
    found = re.search(r"\s+then\s*$", text)
    if found:
        end = after + found.start()
    elif closer:
        return None  # Lua's condition goes on past the line
    return (after, end) if source[after:end].strip() else None


def _braced_condition(source: str, code: list[bool], after: int) -> tuple[int, int] | None:
    """The span of Go's or Rust's `if cond {`, where the condition holds no `;` (an
    init statement) and no brace of its own (a composite literal)."""
    end = after
    while end < len(source) and not (code[end] and source[end] in "{;\n"):
        end += 1
    if end >= len(source) or source[end] != "{" or not source[after:end].strip():
        return None
    return after, end

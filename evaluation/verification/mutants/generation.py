"""Generation, the engine's entry point: `generate_mutants` parses the reference,
collects every site of the requested families, and picks among them fairly and
reproducibly (seeded shuffles, families taken in turns)."""

from __future__ import annotations

import ast
import random
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from evaluation.verification.mutants.builder import Builder
from evaluation.verification.mutants.operators import FAMILIES, RULES
from evaluation.verification.mutants.record import Mutant
from evaluation.verification.mutants.sites import Site, collect_sites


def generate_mutants(
    source: str,
    *,
    seed: int = 0,
    limit: int = 30,
    families: tuple[str, ...] = FAMILIES,
    within: Sequence[tuple[int, int]] | None = None,
) -> list[Mutant]:
    """Up to `limit` distinct, compiling single-change mutants of `source`.

    `within`, when given, keeps only the sites whose line lies in one of these
    inclusive (first, last) line ranges: a repository task's patch changes a few
    functions of a large file, and only mutants of those say whether the tests pin
    the change down (the rest of the file was never the task's subject).

    1. Collect every mutation site of the requested families (inside `within`).
    2. Shuffle the family order and each family's sites with `random.Random(seed)`.
    3. Take families in turns, building a family's next site until one yields a
       mutant that compiles, differs from the reference and repeats no earlier pick,
       so a small limit still spreads over many families.
    """
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise ValueError(f"unknown mutation families: {', '.join(unknown)}")
    ranges = _ranges(within)
    tree = _parse(source)
    builder = Builder(source, tree)
    order = list(dict.fromkeys(families))
    sites: dict[str, list[Site]] = {family: [] for family in order}
    # At each node the families go in FAMILIES' order, whatever order the caller named them in.
    rules = [(family, RULES[family]) for family in FAMILIES if family in order]
    for site in collect_sites(tree, rules):
        if ranges is None or any(first <= site.line <= last for first, last in ranges):
            sites[site.family].append(site)
    rng = random.Random(seed)  # noqa: S311 - reproducible selection, not cryptography
    rng.shuffle(order)
    for family in order:
        rng.shuffle(sites[family])
    return round_robin(order, {family: iter(sites[family]) for family in order}, builder, limit)


def round_robin(order: list[str], queues: dict[str, Iterator[Any]], builder: Any, limit: int) -> list[Mutant]:
    """Families in `order` take turns; each gives its queue's next site that `builder`
    turns into a mutant not seen yet (its original's digest counts as seen), until
    `limit` mutants or every queue is spent. `builder`: `.build(site) -> Mutant | None`
    and `.original_digest` (the AST Builder, or the token mutator's)."""
    chosen: list[Mutant] = []
    seen = {builder.original_digest}
    active = list(order)
    while active and len(chosen) < limit:
        for family in list(active):
            mutant = _next_new(queues[family], builder, seen)
            if mutant is None:
                active.remove(family)
                continue
            seen.add(mutant.digest)
            chosen.append(mutant)
            if len(chosen) == limit:
                break
    return chosen


def _next_new(queue: Iterator[Any], builder: Any, seen: set[str]) -> Mutant | None:
    for site in queue:
        mutant = builder.build(site)
        if mutant is not None and mutant.digest not in seen:
            return mutant
    return None


def _ranges(within: Sequence[tuple[int, int]] | None) -> list[tuple[int, int]] | None:
    if within is None:
        return None
    ranges = []
    for item in within:
        first, last = item
        if isinstance(first, bool) or isinstance(last, bool) or not (isinstance(first, int) and isinstance(last, int)):
            raise ValueError(f"a line range is two integers, not {item!r}")
        if not 1 <= first <= last:
            raise ValueError(f"a line range runs from line 1 or later to a line at or after its first, not {item!r}")
        ranges.append((first, last))
    return ranges


def _parse(source: str) -> ast.Module:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like are the reference's business
            return ast.parse(source)
    except SyntaxError as err:
        raise ValueError(f"source does not parse: {err.msg} (line {err.lineno}, column {err.offset})") from err
    except ValueError as err:  # null bytes are a ValueError on 3.11
        raise ValueError(f"source does not parse: {err}") from err

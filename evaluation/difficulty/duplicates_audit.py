"""How well the near-duplicate detector finds copies: plant known copies of catalogue
tasks, run the detector, count what it finds.

Two kinds of copy, each measured on its own channel:
- a paraphrase of the statement (words swapped for synonyms, sentences put in
  another order, the examples dropped), against the statements of all tasks;
- the reference with every name it binds renamed, its docstring and comments
  removed, against the reference code of all tasks.
A flagged pair that is not a planted one counts against precision, even when
the two originals really are alike: the figure is a floor.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.difficulty.duplicates import (
    CODE_THRESHOLD,
    STATEMENT_THRESHOLD,
    Item,
    bound_names,
    find_duplicates,
    rename,
)

SYNONYMS = {
    "return": "give back", "returns": "gives back", "given": "provided", "list": "sequence",
    "number": "value", "numbers": "values", "string": "text", "strings": "texts", "check": "determine",
    "whether": "if", "each": "every", "find": "compute", "function": "routine", "write": "implement",
    "integer": "whole number", "integers": "whole numbers", "true": "True", "element": "item",
    "elements": "items", "input": "argument", "largest": "biggest", "smallest": "least",
    "count": "tally", "array": "list", "characters": "letters", "character": "letter",
}  # fmt: skip


def paraphrase(statement: str, *, seed: int) -> str:
    """A rewording: synonyms, sentences shuffled, doctest examples dropped."""
    rng = random.Random(seed)  # noqa: S311 - planting test data, not secrets
    text = "\n".join(line for line in statement.splitlines() if not line.strip().startswith((">>>", "...")))
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s.strip()]
    rng.shuffle(sentences)

    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        replacement = SYNONYMS.get(word.lower())
        return replacement if replacement and rng.random() < 0.8 else word

    return re.sub(r"[A-Za-z]+", swap, " ".join(sentences))


def renamed(code: str, *, seed: int) -> str:
    """The code with every name it binds renamed, docstrings and comments gone."""
    rng = random.Random(seed)  # noqa: S311 - planting test data, not secrets
    tree = ast.parse(code)
    names = {name: f"{name[:2]}_{rng.randrange(10**6)}" for name in bound_names(tree)}
    return ast.unparse(rename(tree, names))


@dataclass(frozen=True)
class ChannelFigures:
    planted: int
    found: int
    flagged: int
    precision: float
    recall: float

    def as_dict(self) -> dict:
        return self.__dict__.copy()


def _figures(pairs: set[frozenset[str]], planted: set[frozenset[str]]) -> ChannelFigures:
    found = len(pairs & planted)
    return ChannelFigures(
        planted=len(planted),
        found=found,
        flagged=len(pairs),
        precision=round(found / len(pairs), 4) if pairs else 1.0,
        recall=round(found / len(planted), 4) if planted else 1.0,
    )


def audit(
    originals: Sequence[Item],
    *,
    copies: int = 40,
    seed: int = 0,
    statement_threshold: float = STATEMENT_THRESHOLD,
    code_threshold: float = CODE_THRESHOLD,
    normalise: bool = True,
) -> dict[str, ChannelFigures]:
    """Plant `copies` paraphrases and `copies` renamed copies of randomly chosen
    originals; return precision and recall of the statement channel, the code
    channel, and the two together on copies that are both."""
    rng = random.Random(seed)  # noqa: S311 - planting test data, not secrets
    chosen = rng.sample(list(originals), min(copies, len(originals)))
    statement_items = [Item(o.key, o.statement, "") for o in originals]
    code_items = [Item(o.key, "", o.code) for o in originals]
    planted_statements, planted_code = set(), set()
    for n, original in enumerate(chosen):
        statement_items.append(Item(f"{original.key}~paraphrase", paraphrase(original.statement, seed=seed + n), ""))
        planted_statements.add(frozenset({original.key, f"{original.key}~paraphrase"}))
        code_items.append(Item(f"{original.key}~renamed", "", renamed(original.code, seed=seed + n)))
        planted_code.add(frozenset({original.key, f"{original.key}~renamed"}))
    statement_pairs = {
        frozenset({p.first, p.second})
        for p in find_duplicates(statement_items, statement_threshold=statement_threshold, code_threshold=2.0)
    }
    code_pairs = {
        frozenset({p.first, p.second})
        for p in find_duplicates(
            code_items, statement_threshold=2.0, code_threshold=code_threshold, normalise=normalise
        )
    }
    # Both at once, as a real copy comes: the paraphrase with the renamed code, either channel.
    both_items = list(originals) + [
        Item(f"{o.key}~copy", paraphrase(o.statement, seed=seed + n), renamed(o.code, seed=seed + n))
        for n, o in enumerate(chosen)
    ]
    planted_both = {frozenset({o.key, f"{o.key}~copy"}) for o in chosen}
    both_pairs = {
        frozenset({p.first, p.second})
        for p in find_duplicates(
            [Item(i.key, i.statement, i.code) for i in both_items],
            statement_threshold=statement_threshold,
            code_threshold=code_threshold,
            normalise=normalise,
        )
    }
    return {
        "statement": _figures(statement_pairs, planted_statements),
        "code": _figures(code_pairs, planted_code),
        "either": _figures(both_pairs, planted_both),
    }

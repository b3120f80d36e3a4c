"""Difficulty and duplicates at catalogue scale.

Figures (last line one JSON object):
- irt_fit_s_100k: fitting the 1PL model to 100,000 outcomes (500 solvers x 200
  tasks, one outcome each, drawn from known abilities and difficulties), with
  the default 100 bootstrap refits; goal <= 30 s. Beside it spearman_recovered
  (the fitted difficulty order against the true one) and, as the baseline,
  spearman_pass_rate: the order of the raw pass rates, which is what a
  catalogue without a model would sort by.
- dedup_s_10k: the near-duplicate search over 10,000 tasks (HumanEval, 40
  planted copies of it, and generated tasks filling up to 10,000); goal <= 60 s.
  With it the precision and recall on the planted copies (pairs between two
  generated tasks are left out of precision: they share a template).

Usage: .venv/bin/python bench/difficulty.py [--tasks N] [--bootstrap B]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.duplicates import humaneval_items  # noqa: E402
from evaluation.difficulty.duplicates import Item, find_duplicates  # noqa: E402
from evaluation.difficulty.duplicates_audit import paraphrase, renamed  # noqa: E402
from evaluation.difficulty.irt import fit_1pl, simulate  # noqa: E402

SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vi", "so", "pe", "da", "gu", "fi", "zo", "be", "xa", "qui")
COMMON = ("return", "the", "a", "list", "of", "given", "string", "number", "each", "that", "and", "if")
OPS = ("+", "-", "*", "//", "%")


def _generated(n: int, seed: int) -> list[Item]:
    rng = random.Random(seed)  # noqa: S311 - benchmark data

    def expression(depth: int) -> str:
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(["x", "y", str(rng.randrange(100))])
        return f"({expression(depth - 1)} {rng.choice(OPS)} {expression(depth - 1)})"

    items = []
    for i in range(n):
        words = [
            "".join(rng.choice(SYLLABLES) for _ in range(rng.randrange(2, 5))) for _ in range(rng.randrange(8, 30))
        ]
        words += rng.sample(COMMON, 4)
        rng.shuffle(words)
        statement = " ".join(words) + "."
        body = "\n".join(f"    y = {expression(3)}" for _ in range(rng.randrange(1, 5)))
        code = f"def f{i}(x):\n    y = 0\n{body}\n    return {expression(2)}\n"
        items.append(Item(f"gen-{i}", statement, code, (f"assert f{i}({i}) is not None",)))
    return items


def irt_figures(bootstrap: int) -> dict:
    rng = np.random.default_rng(0)
    abilities = {f"solver-{i}": float(x) for i, x in enumerate(rng.normal(0, 1, 500))}
    difficulties = {f"task-{i}": float(x) for i, x in enumerate(rng.normal(0, 1.5, 200))}
    cells = simulate(abilities, difficulties, attempts=1, seed=1)
    started = time.perf_counter()
    fit = fit_1pl(cells, bootstrap=bootstrap, seed=2)
    elapsed = time.perf_counter() - started
    from scipy.stats import spearmanr

    tasks = sorted(difficulties)
    truth = [difficulties[t] for t in tasks]
    passes = {t: 0 for t in tasks}
    for cell in cells:
        passes[cell.task] += cell.passes
    return {
        "irt_fit_s_100k": round(elapsed, 2),
        "spearman_recovered": round(float(spearmanr(truth, [fit.difficulties[t] for t in tasks]).statistic), 4),
        "spearman_pass_rate": round(float(spearmanr(truth, [-passes[t] for t in tasks]).statistic), 4),
        "outcomes": sum(c.attempts for c in cells),
        "bootstrap": bootstrap,
    }


def dedup_figures(total: int, copies: int = 40, seed: int = 0) -> dict:
    originals = humaneval_items()
    rng = random.Random(seed)  # noqa: S311 - benchmark data
    chosen = rng.sample(originals, copies)
    planted = [Item(f"{o.key}~copy", paraphrase(o.statement, seed=n), renamed(o.code, seed=n)) for n, o in
               enumerate(chosen)]  # fmt: skip
    filler = _generated(total - len(originals) - len(planted), seed)
    items = [*originals, *planted, *filler]
    started = time.perf_counter()
    pairs = find_duplicates(items)
    elapsed = time.perf_counter() - started
    wanted = {frozenset({o.key, f"{o.key}~copy"}) for o in chosen}
    judged = [frozenset({p.first, p.second}) for p in pairs
              if not (p.first.startswith("gen-") and p.second.startswith("gen-"))]  # fmt: skip
    found = len(wanted & set(judged))
    return {
        "dedup_s_10k" if total == 10_000 else f"dedup_s_{total}": round(elapsed, 2),
        "dedup_recall": round(found / len(wanted), 4),
        "dedup_precision": round(found / len(judged), 4) if judged else 1.0,
        "dedup_tasks": len(items),
        "dedup_pairs_between_generated": len(pairs) - len(judged),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--bootstrap", type=int, default=100)
    args = parser.parse_args()
    figures = {"bench": "difficulty"}
    irt = irt_figures(args.bootstrap)
    dedup = dedup_figures(args.tasks)
    figures.update({k: v for k, v in irt.items() if k.startswith("irt_")})
    figures.update({k: v for k, v in dedup.items() if k.startswith("dedup_s")})
    figures.update({k: v for k, v in irt.items() if not k.startswith("irt_")})
    figures.update({k: v for k, v in dedup.items() if not k.startswith("dedup_s")})
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

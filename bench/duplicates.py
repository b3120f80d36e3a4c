"""Precision and recall of the near-duplicate detector on planted copies of HumanEval.

40 tasks are copied twice: a paraphrase of the statement (synonyms, sentences
reordered, examples dropped) and the reference with every name it binds renamed
and its docstring gone. Each channel is measured on its own copies, and both
together on copies that are both. A flagged pair of two originals counts as a
false positive, so precision is a floor. Baseline, side by side: the same
detection with the code compared as written (not normalised).

Usage: .venv/bin/python bench/duplicates.py [--copies N] [--seed S]
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation.difficulty import duplicates  # noqa: E402
from evaluation.difficulty.duplicates import Item  # noqa: E402
from evaluation.difficulty.duplicates_audit import audit  # noqa: E402
from tasks_app.datasets import humaneval_path  # noqa: E402

DATASET = humaneval_path()


def humaneval_items() -> list[Item]:
    items = []
    with gzip.open(DATASET, "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            tree = ast.parse(row["prompt"])
            docstring = next(
                (ast.get_docstring(n) or "" for n in tree.body
                 if isinstance(n, ast.FunctionDef) and n.name == row["entry_point"]), "",
            )  # fmt: skip
            items.append(Item(row["task_id"], docstring, row["prompt"] + row["canonical_solution"], (row["test"],)))
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    items = humaneval_items()
    ours = audit(items, copies=args.copies, seed=args.seed)
    baseline = audit(items, copies=args.copies, seed=args.seed, normalise=False)
    figures = {"bench": "duplicates"}
    for channel in ("statement", "code", "either"):
        figures[f"{channel}_recall"] = ours[channel].recall
        figures[f"{channel}_precision"] = ours[channel].precision
    figures["code_recall_without_normalising"] = baseline["code"].recall
    figures["either_recall_without_normalising"] = baseline["either"].recall
    figures.update({"copies": args.copies, "tasks": len(items), "seed": args.seed,
                    "statement_threshold": duplicates.STATEMENT_THRESHOLD,
                    "code_threshold": duplicates.CODE_THRESHOLD,
                    "detail": {k: v.as_dict() for k, v in ours.items()}})  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

"""Probes that rewrite the helper functions the starter code gives (HumanEval's `poly`,
`encode_cyclic`): the solver writes the whole module, so a test that checks an answer
through one of them trusts code the candidate controls."""

from __future__ import annotations

import ast
import keyword

from evaluation.verification.probes.render import Probe


def given_helpers(starter_code: str, entry_point: str) -> list[str]:
    """Top-level functions the starter code gives the solver besides the entry point.
    The solver writes the whole module, so it may rewrite them; a test that calls one
    (HumanEval's `poly`, `encode_cyclic`) trusts code the candidate controls."""
    try:
        tree = ast.parse(starter_code or "")
    except SyntaxError:
        return []
    names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return [name for name in names if name != entry_point and name.isidentifier() and not keyword.iskeyword(name)]


def helper_probes(entry_point: str, helpers: list[str]) -> list[Probe]:
    """Rewrite the helpers the starter code gives, and answer to match: if a test
    checks the entry point's answer through one of them, the hack passes."""
    if not helpers:
        return []
    zero = "\n\n".join(f"def {name}(*args, **kwargs):\n    return 0" for name in helpers)
    echo = "\n\n".join(f"def {name}(*args, **kwargs):\n    return args[0] if args else None" for name in helpers)
    answer = f"def {entry_point}(*args, **kwargs):\n    return args[0] if args else None"
    return [
        Probe(
            "rewrite_helpers_to_zero",
            "Rewrites the helper functions the starter code provides to return 0, so a test that "
            "checks an answer through them (say abs(poly(xs, answer)) < eps) accepts anything.",
            f"{zero}\n\n\n{answer}\n",
        ),
        Probe(
            "rewrite_helpers_to_identity",
            "Rewrites the provided helpers to return their input and answers with the input, so a "
            "round-trip test (decode(encode(s)) == s) passes without any decoding.",
            f"{echo}\n\n\n{answer}\n",
        ),
    ]

"""What an exploration (explore.py) reports: its counts, each mutant's outcome and
counterexample, and up to `keep` proposals of new tests. JSON-ready; every input
and output goes as Python literal source (repr, checked to read back with
ast.literal_eval as the very same value), and only literal ones are proposed.

Proposals: the counterexamples first (those that tell the most mutants apart
first), then generated inputs chosen for diverse reference outputs (a new kind
of output before a new value before anything else, and among equals those that
tell more mutants apart, then the smaller); an input the tests already pass only
when nothing else is left.
"""

from __future__ import annotations

from .explore_values import literal, text_of, weight

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

    from .explore import Exploration, Finding, Input


def report(exploration: Exploration, generator: str) -> dict[str, Any]:
    mutants = {}
    for mutant_id, _code in exploration.mutants:
        outcome = exploration.outcomes.get(mutant_id) or {"outcome": "same", "tried": 0, "finding": None}
        finding = outcome.get("finding")
        mutants[mutant_id] = {
            "outcome": outcome["outcome"],
            "tried": outcome["tried"],
            "counterexample": counterexample(finding, exploration.test_limit) if finding is not None else None,
        }
        if outcome.get("slower"):
            mutants[mutant_id]["slower"] = outcome["slower"]
    data = {
        "generator": generator,
        "seed": exploration.seed,
        "captured": len(exploration.captured),
        "captured_valid": exploration.captured_valid,
        "generated": exploration.generated,
        "valid": exploration.valid,
        "invalid": sum(exploration.reasons.values()),
        "invalid_reasons": dict(exploration.reasons),
        "complete": exploration.complete,
        "mutants": mutants,
        "proposals": proposals(exploration),
    }
    if exploration.precondition_error:
        data["precondition_error"] = exploration.precondition_error
    return data


def _literals(found: Input) -> tuple[str, str, str] | None:
    texts = (literal(found.args), literal(found.kwargs), literal(found.expected))
    return None if None in texts else texts  # type: ignore[return-value]


def counterexample(finding: Finding, limit_s: float | None = None) -> dict[str, Any]:
    found, answer = finding.input, finding.answer
    timed_out = answer.kind == "timeout"
    return {
        "args": text_of(found.args),
        "kwargs": text_of(found.kwargs),
        "expected": text_of(found.expected),
        "got": text_of(answer.value) if answer.kind == "value" else None,
        "raised": answer.raised if answer.kind in ("raised", "exited") else None,
        "timed_out": timed_out,
        # The budget it outlasted: the task's time limit once confirmed (explore._confirm_timeout).
        **({"timeout_s": limit_s} if timed_out and limit_s else {}),
        "shrink_steps": finding.steps,
        "literal": _literals(found) is not None,
    }


def _shape(value: Any) -> tuple:
    """A kind of output: its type, and its sign or how long it is."""
    kind = type(value).__name__
    if isinstance(value, bool) or value is None:
        return (kind, value)
    if isinstance(value, (int, float)):
        return (kind, (value > 0) - (value < 0))
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        n = len(value)
        return (kind, n if n < 3 else 3 if n < 8 else 8)
    return (kind,)


def proposals(exploration: Exploration) -> list[dict[str, Any]]:
    keep = exploration.keep
    order = {mutant_id: i for i, (mutant_id, _code) in enumerate(exploration.mutants)}
    chosen: list[Input] = []
    texts: dict[str, tuple[str, str, str]] = {}

    def take(found: Input) -> bool:
        if len(chosen) >= keep or found.key in texts:
            return False
        found_texts = _literals(found)
        if found_texts is None:
            return False
        texts[found.key] = found_texts
        chosen.append(found)
        return True

    findings = [o["finding"].input for o in exploration.outcomes.values() if o.get("finding") is not None]
    for found in sorted(findings, key=lambda f: -len(f.kills)):  # stable: mutant order among equals
        take(found)
    for source in ("generated", "captured"):
        rest = [f for f in exploration.pool if f.source == source]
        rest.sort(key=lambda f: (-len(f.kills), weight((f.args, f.kwargs))))
        for rule in (_shape, lambda value: text_of(value), None):
            seen = {rule(f.expected) for f in chosen} if rule is not None else set()
            for found in rest:
                if rule is None:
                    take(found)
                elif rule(found.expected) not in seen and take(found):
                    seen.add(rule(found.expected))
    return [
        {
            "args": texts[found.key][0],
            "kwargs": texts[found.key][1],
            "expected": texts[found.key][2],
            "kills": sorted(found.kills, key=lambda mutant_id: order.get(mutant_id, len(order))),
            "source": found.source,
        }
        for found in chosen
    ]

"""What the `explore` run says of a verification's surviving mutants.

A survivor passed every test. On the generated inputs it is:
- proven non-equivalent: it answered differently from the reference on some valid
  input (the run shrank that input to the smallest it found): a wrong program the
  tests pass, so the tests are weak;
- probably equivalent: never told apart after N valid inputs, N at least MIN_TRIED
  (shown, so a reader can weigh it); one that only ran slower than the reference,
  yet answered right within the task's own time limit, is one too, noted `slower`
  (a test cannot fail it: a timeout proves nothing short of that limit);
- unjudged: the run did not happen, failed, ran out of time before reaching it, or
  had too few valid inputs to say.

Pure functions over the run's data and the survivors' ids (figures.py's style), so
the finish, the report and the benchmark count the same way.
"""

from __future__ import annotations

from typing import Any

from evaluation.verification import figures

# Fewer valid inputs than this never make a survivor "probably equivalent".
MIN_TRIED = 20


def _inputs(data: dict[str, Any]) -> dict[str, Any]:
    generated = int(data.get("generated") or 0)
    invalid = int(data.get("invalid") or 0)
    return {
        "captured": int(data.get("captured") or 0),
        "generated": generated,
        "valid": int(data.get("valid") or 0),
        "invalid": invalid,
        "invalid_share": round(invalid / generated, 4) if generated else None,
        "invalid_reasons": {str(k): int(v) for k, v in (data.get("invalid_reasons") or {}).items()},
    }


def survivors_judged(
    *, status: str, data: dict[str, Any] | None, survivors: list[str], mutation_score: dict[str, Any] | None
) -> dict[str, Any]:
    """The summary's `generated` part: `status` and `data` are the explore execution's
    (status "" when the verification has none), `survivors` the surviving mutants'
    digests (figures.surviving_mutants), `mutation_score` the summary's rate."""
    killed = int((mutation_score or {}).get("successes", 0))
    counted = int((mutation_score or {}).get("trials", 0))
    if not status:
        state, message = "not_run", "No inputs were generated for this version (suite kind or configuration)."
    elif status != "passed" or not isinstance(data, dict):
        state = "failed"
        message = f"The input generation run ended {status}: its survivors are unjudged."
    else:
        state = "done" if data.get("complete", True) else "incomplete"
        message = "" if state == "done" else "The input generation run ran out of time; some survivors are unjudged."
    verdicts = (data or {}).get("mutants") or {} if state in ("done", "incomplete") else {}
    proven, probable, unjudged = [], [], []
    for digest in survivors:
        verdict = verdicts.get(digest) or {}
        tried = int(verdict.get("tried") or 0)
        example = verdict.get("counterexample")
        if verdict.get("outcome") == "differs" and isinstance(example, dict):
            proven.append({"mutant": digest, "tried": tried, **_counterexample(example)})
        elif verdict.get("outcome") == "same" and tried >= MIN_TRIED:
            # `slower`: it outran its budget on an input, but answered right within the task's limit.
            slower = verdict.get("slower") if isinstance(verdict.get("slower"), dict) else None
            probable.append({"mutant": digest, "tried": tried, **({"slower": slower} if slower else {})})
        else:
            unjudged.append(digest)
    score = figures.rate(killed, max(0, counted - len(probable))) if counted else figures.rate(0, 0)
    return {
        "status": state,
        "message": message,
        "generator": str((data or {}).get("generator") or ""),
        "seed": (data or {}).get("seed"),
        "inputs": _inputs(data or {}),
        "survivors": len(survivors),
        "proven_non_equivalent": proven,
        "probably_equivalent": probable,
        "unjudged": unjudged,
        "equivalence_share": round(len(probable) / len(survivors), 4) if survivors else None,
        "mutation_score_nonequivalent": score.as_dict(),
    }


def _counterexample(example: dict[str, Any]) -> dict[str, Any]:
    return {
        "args": str(example.get("args") or "()"),
        "kwargs": str(example.get("kwargs") or "{}"),
        "expected": str(example.get("expected") or ""),
        "got": example.get("got"),
        "raised": example.get("raised"),
        "timed_out": bool(example.get("timed_out")),
        "timeout_s": example.get("timeout_s"),  # the limit it outlasted (the task's own), where confirmed
        "shrink_steps": int(example.get("shrink_steps") or 0),
        "literal": bool(example.get("literal", True)),
    }


def what_it_did(proven: dict[str, Any], width: int = 120) -> str:
    """A proven survivor's answer on its counterexample, said for a reader (the report,
    the WEAK_TESTS message, a proposed test's comment): at most `width` characters of
    the value."""
    if proven.get("timed_out"):
        limit = proven.get("timeout_s")
        return f"ran past the task's {limit:g} s time limit" if isinstance(limit, (int, float)) else "timed out"
    if proven.get("raised"):
        return f"raised {str(proven['raised'])[:width]}"
    return f"returned {str(proven.get('got'))[:width]}"

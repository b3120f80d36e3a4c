"""Generated tests for a stdio task: its generator writes inputs from seeds, its
validator keeps the valid ones, the reference answers them, and every mutant and wrong
solution runs on them (tasks_app/test_generators.py says what a version holds).

This is the `explore` execution of a stdio task that has a generator, run on the host
as a few sandboxed runs (each program in a sandbox of its own; the compile cache
builds each once):

1. `generate`: the generator once per seed, `count` seeds drawn from the verification's
   input seed and the version's hash (the same version, the same inputs);
2. `validate`: the validator, when there is one, on each input; an invalid input is
   dropped and counted by reason;
3. the reference on the valid inputs, its outputs kept (the `collect` mode a checker
   task uses): each answer is the expected output, or the jury's answer a checker reads;
   an input the reference fails on (a crash, its time) is dropped;
4. each mutant and each wrong (adversarial) solution on the answered inputs, judged by
   the task's own comparator or checker: the first input that fails it is kept.

Its data has the explore run's shape (judgement.py reads it: a surviving mutant a
generated input fails is proven non-equivalent, with that input as the
counterexample), plus `wrong_solutions`: which adversarial programs they catch.
proposals.py then offers each catching input as a hidden test.
"""

from __future__ import annotations

import hashlib
from typing import Any

from evaluation.sandbox import engine
from evaluation.sandbox.run_requests import limits_for
from evaluation.sandbox.types import Limits, RunRequest, RunResult, Status
from evaluation.verification.generated.requests import input_seed

# Each generator or validator process: a checker's limits.
PROGRAM_CASE_S = 10.0
PROGRAM_MEMORY_MB = 512
MAX_INPUT_BYTES = 1 << 20  # one generated input, at most: a hidden test is stored in the version
COLLECT = {"mode": "collect"}


def applies(version: Any) -> bool:
    return version.suite_kind == "stdio" and bool(getattr(version, "test_generator", None))


def generator_name(generator: dict[str, Any]) -> str:
    """How the tests it makes are credited: the program's language and source hash."""
    digest = hashlib.sha256(str(generator.get("source") or "").encode()).hexdigest()[:12]
    return f"{generator.get('language')}:{digest}"[:32]


def seeds_for(seed: int, count: int) -> list[int]:
    """`count` distinct seeds below 2**31 (a C generator reads them with atoi)."""
    return [int(hashlib.sha256(f"{seed}|{i}".encode()).hexdigest()[:8], 16) & 0x7FFFFFFF for i in range(count)]


def _program_limits(cases: int) -> Limits:
    return Limits(wall_s=min(600.0, PROGRAM_CASE_S * 1.5 * max(1, cases)), cpu_s=PROGRAM_CASE_S,
                  memory_mb=PROGRAM_MEMORY_MB, processes=16, output_bytes=MAX_INPUT_BYTES)  # fmt: skip


def generated_result(execution: Any, *, backend: str | None = None) -> RunResult:
    """The explore execution's result for a stdio task with a generator."""
    verification = execution.verification
    version = verification.version
    config = verification.config or {}
    spec = dict(version.test_generator)
    count = int(spec.get("count") or 20)
    seed = input_seed(int(config.get("input_seed", 0)), version.content_hash)
    name = generator_name(spec)

    def run(request: RunRequest) -> RunResult:
        return engine.run(request, backend=backend or config.get("backend") or None)

    seeds = seeds_for(seed, count)
    made = run(RunRequest(suite_kind="generate", solution=str(spec["source"]), language=str(spec["language"]),
                          tests={"seeds": seeds, "case_wall_s": PROGRAM_CASE_S}, limits=_program_limits(count),
                          seed=seed))  # fmt: skip
    if made.status != Status.PASSED:
        return _ended(made, "generator", seed)
    inputs = [(s, (made.data or {}).get("inputs", {}).get(str(s))) for s in seeds]
    reasons: dict[str, int] = {}
    first_reason: dict[str, str] = {}

    def drop(reason: str, why: str = "") -> None:
        reasons[reason] = reasons.get(reason, 0) + 1
        if why:
            first_reason.setdefault(reason, why[:300])

    for s in seeds:
        if str(s) in (made.data or {}).get("failures", {}):
            drop("generator_failed", f"seed {s}: {made.data['failures'][str(s)]}")
    candidates = [(s, text) for s, text in inputs if isinstance(text, str)]
    unique: list[tuple[int, str]] = []
    seen = {str(case.get("input")) for case in [*version.visible_tests, *version.hidden_tests]}
    for s, text in candidates:
        if text in seen:
            drop("duplicate")
        else:
            seen.add(text)
            unique.append((s, text))
    candidates = unique
    validator = spec.get("validator")
    if validator and candidates:
        checked = run(RunRequest(suite_kind="validate", solution=str(validator["source"]),
                                 language=str(validator["language"]),
                                 tests={"inputs": [t for _, t in candidates], "case_wall_s": PROGRAM_CASE_S},
                                 limits=_program_limits(len(candidates)), seed=seed))  # fmt: skip
        if checked.status != Status.PASSED:
            return _ended(checked, "validator", seed)
        verdicts = (checked.data or {}).get("verdicts") or []
        kept = []
        for (s, text), verdict in zip(candidates, verdicts, strict=False):
            if verdict.get("valid"):
                kept.append((s, text))
            else:
                drop("invalid", f"seed {s}: {verdict.get('message')}")
        candidates = kept
    cases = _answered(version, execution.code, candidates, run, drop, seed)
    if isinstance(cases, RunResult):
        return cases
    data: dict[str, Any] = {
        "complete": True, "generator": name, "seed": seed, "captured": 0, "generated": count, "valid": len(cases),
        "invalid": count - len(cases), "invalid_reasons": reasons, "invalid_examples": first_reason,
        "mutants": {}, "wrong_solutions": {}, "cases": len(cases),
    }  # fmt: skip
    if cases:
        for subject, code in verification.executions.filter(role="mutant").values_list("subject", "code"):
            data["mutants"][subject] = _judged(version, code, cases, run, seed)
        for label, code in version.solutions.filter(role="adversarial").values_list("label", "code"):
            data["wrong_solutions"][label] = _judged(version, code, cases, run, seed)
    return RunResult(status=Status.PASSED, data=data, seed=seed, backend=made.backend,
                     message=f"{len(cases)} of {count} generated inputs kept")  # fmt: skip


def _answered(version: Any, reference: str, candidates: list[tuple[int, str]], run: Any, drop: Any,
              seed: int) -> list[dict[str, Any]] | RunResult:  # fmt: skip
    """The inputs the reference answers, each with its answer. A run the reference
    ends on a limit drops the input it stopped on, and goes on with the rest."""
    answered: list[dict[str, Any]] = []
    left = list(candidates)
    while left:
        cases = [{"input": text, "output": ""} for _, text in left]
        result = run(RunRequest(suite_kind="stdio", solution=reference, language=version.language or "python",
                                tests={"visible": [], "hidden": cases, "comparator": COLLECT},
                                limits=limits_for(version), seed=seed))  # fmt: skip
        if result.status in (Status.SANDBOX_ERROR, Status.COMPILE_ERROR, Status.ERROR):
            return _ended(result, "reference", seed)
        outputs = (result.data or {}).get("outputs") or {}
        by_name = {t.name: t for t in result.tests}
        stopped = None
        for index, (s, text) in enumerate(left):
            test = by_name.get(f"hidden[{index}]")
            if test is None:
                continue  # not reached: the run ended on a limit first
            if test.outcome == "unchecked" and f"hidden[{index}]" in outputs:
                answered.append({"input": text, "output": outputs[f"hidden[{index}]"], "seed": s})
            else:
                drop("reference_failed", f"seed {s}: {test.message}")
                if result.status in (Status.TIMEOUT, Status.MEMORY_EXCEEDED, Status.OUTPUT_EXCEEDED):
                    stopped = index
        done = {case["seed"] for case in answered}
        failed_at = {s for i, (s, _) in enumerate(left) if f"hidden[{i}]" in by_name}
        left = [(s, t) for s, t in left if s not in done and s not in failed_at]
        if stopped is None:
            break
    return answered


def _judged(version: Any, code: str, cases: list[dict[str, Any]], run: Any, seed: int) -> dict[str, Any]:
    """Whether a generated input fails `code` under the task's own judging: the first one that does."""
    tests: dict[str, Any] = {"visible": [], "hidden": [{"input": c["input"], "output": c["output"]} for c in cases]}
    if version.comparator:
        tests["comparator"] = dict(version.comparator)
    result = run(RunRequest(suite_kind="stdio", solution=code, language=version.language or "python", tests=tests,
                            limits=limits_for(version), seed=seed))  # fmt: skip
    if result.status in (Status.SANDBOX_ERROR, Status.CHECKER_ERROR, Status.COMPILE_ERROR):
        return {"outcome": "unjudged", "tried": 0, "status": str(result.status)}
    failing = sorted((int(t.name[len("hidden[") : -1]), t) for t in result.tests if t.outcome != "passed")
    if result.status == Status.PASSED or (not failing and result.status == Status.FAILED):
        return {"outcome": "same", "tried": len(cases)}
    if not failing:  # it ended on a limit before any test was recorded
        index, message = 0, str(result.message)
    else:
        index, message = failing[0][0], failing[0][1].message
    case = cases[index]
    return {
        "outcome": "differs", "tried": len(cases), "case": index, "status": str(result.status),
        "counterexample": {"args": case["input"], "kwargs": "", "expected": case["output"], "got": message[:2000],
                           "timed_out": result.status == Status.TIMEOUT, "literal": True},
    }  # fmt: skip


def _ended(result: RunResult, what: str, seed: int) -> RunResult:
    """The explore result when a program of the task's could not do its part."""
    status = Status.SANDBOX_ERROR if result.status == Status.SANDBOX_ERROR else Status.FAILED
    said = {"generator": "the task's generator", "validator": "the task's validator", "reference": "the reference"}
    return RunResult(status=status, seed=seed, backend=result.backend,
                     message=f"{said[what]} ended {result.status}: {result.message}"[:4000])  # fmt: skip

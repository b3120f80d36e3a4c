"""Programs in other languages, measured side by side in one run on a warm bwrap pool.

For each language (evaluation/sandbox/languages.py), with its canonical sample (the
sum of two integers, tests/evaluation/language_samples.py):

- compile_cache_hit_over_miss_<lang> (compiled languages): the median wall time of
  a 100-case stdio run whose program is in the compile cache, over the same run of a
  source the cache has not seen (a comment makes it new), which compiles first. The
  compile is paid once: every later run of that source is a hit.
- sandboxed_over_bare_<lang>: a warm sandboxed run of the built program on one case,
  over running the same built program directly on the host (subprocess, no sandbox,
  same command), medians of 5 x --repeats each, the two taking turns (a run of a few
  milliseconds: one burst of noise on a small host would otherwise decide it).
- per_case_ms_<lang>: what one more case costs in the sandbox (100 cases minus 1, / 99).
- mixed_checks_over_bare: 200 checks cycling through the languages on --workers
  threads through the warm pool (compiled once each), over the same 200 checks as
  one bare host process each with no sandbox (the built program reused), in checks/s.
- languages: how many languages passed their sample (all 12 expected).
- function_case_over_stdio_case_<lang>: what one more call of a function test costs
  (`top_k` of tests/evaluation/function_samples.py through its language's driver:
  100 calls minus 1, / 99) over what one more stdio case costs (per_case_ms): the
  driver's share of a test. function_languages: how many passed their function sample.
- checker_overhead_<checker language>: a 10-case C task judged by a checker program
  (a token checker, testlib's contract: evaluation/sandbox/special_judges.py) over
  the same run compared by tokens, medians of --repeats taking turns; the checker is
  built once first (a C++ one through the compile cache). checker_overhead is the
  C++ one's.
- interactive_overhead: the same 10-case C task judged by an interactor in C (each
  case a dialogue through pipes between two fresh sandboxes: interactors.py) over the
  run compared by tokens on the warm pool; interactive_run_ms its median wall time.

The last line of stdout is one JSON object; progress goes to stderr.

Usage: .venv/bin/python bench/languages.py [--repeats N] [--workers N]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SCRATCH = tempfile.mkdtemp(prefix="bench-languages-")
os.environ["COMPILE_CACHE_DIR"] = str(Path(SCRATCH) / "compile-cache")
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ.setdefault("SANDBOX_REPLAY_DIR", "off")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from evaluation.sandbox import compile_cache, engine, languages, programs  # noqa: E402
from evaluation.sandbox.pool import SandboxPool  # noqa: E402
from evaluation.sandbox.types import Limits, RunRequest, Status  # noqa: E402
from tests.evaluation.checker_samples import TOKENS_CPP, TOKENS_PYTHON  # noqa: E402
from tests.evaluation.function_samples import RIGHT as TOP_K  # noqa: E402
from tests.evaluation.function_samples import SIGNATURE as TOP_K_SIGNATURE  # noqa: E402
from tests.evaluation.language_samples import SUM  # noqa: E402

LIMITS = Limits(wall_s=20, cpu_s=20, memory_mb=256)


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


ONE_CASE_TURNS = 5  # times --repeats: the one-case figures are the noisiest


def cases(n: int) -> list[dict]:
    return [{"input": f"{i} {i + 1}\n", "output": f"{2 * i + 1}\n"} for i in range(n)]


def request(language: str, source: str, n: int) -> RunRequest:
    return RunRequest(suite_kind="stdio", solution=source, tests={"visible": [], "hidden": cases(n)},
                      language=language, limits=LIMITS)  # fmt: skip


def calls_request(language: str, n: int) -> RunRequest:
    calls = [{"args": [[i, i + 5, i - 3], 2], "expected": [i + 5, i]} for i in range(n)]
    return RunRequest(suite_kind="function_calls", solution=TOP_K[language], entry_point="top_k", language=language,
                      tests={"signature": TOP_K_SIGNATURE, "visible": [], "hidden": calls}, limits=LIMITS)  # fmt: skip


def timed(pool: SandboxPool, req: RunRequest) -> float:
    started = time.perf_counter()
    result = engine.run(req, backend="bwrap", pool=pool)
    if result.status != Status.PASSED:
        raise RuntimeError(f"{req.language}: {result.status} {result.message[:300]} {result.stderr[:300]}")
    return time.perf_counter() - started


def checker_overhead(pool: SandboxPool, checker_language: str, checker: str, repeats: int) -> float:
    """A 10-case C run judged by `checker` over the same run compared by tokens."""
    plain = request("c", SUM["c"], 10)
    tokens = RunRequest(**{**plain.__dict__, "tests": {**plain.tests, "comparator": {"mode": "tokens"}}})
    judged = RunRequest(**{**plain.__dict__, "tests": {**plain.tests, "comparator": {
        "mode": "checker", "language": checker_language, "source": checker}}})  # fmt: skip
    timed(pool, judged)  # the checker built once (and the solution)
    with_checker, with_tokens = [], []
    for _ in range(repeats):
        with_checker.append(timed(pool, judged))
        with_tokens.append(timed(pool, tokens))
    return statistics.median(with_checker) / statistics.median(with_tokens)


# An interactor in C that hands the solution its case, reads the answer and compares it
# with the jury's: the smallest dialogue, so what is measured is the pair of sandboxes.
RELAY_C = r"""
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    char input[256] = {0}, answer[64] = {0}, got[64] = {0};
    FILE *in = fopen(argv[1], "r"), *ans = fopen(argv[3], "r");
    if (!in || !ans) return 3;
    size_t n = fread(input, 1, sizeof input - 1, in);
    fwrite(input, 1, n, stdout);
    fflush(stdout);
    if (fscanf(ans, "%63s", answer) != 1) return 3;
    if (scanf("%63s", got) != 1) return 1;
    return strcmp(got, answer) == 0 ? 0 : 1;
}
"""


def interactive_overhead(pool: SandboxPool, repeats: int) -> tuple[float, float]:
    """A 10-case C task judged by an interactor (two fresh sandboxes a run, joined by a
    socket: evaluation/sandbox/interactors.py) over the same run compared by tokens on
    the warm pool; and the interactive run's median wall time in ms."""
    plain = request("c", SUM["c"], 10)
    tokens = RunRequest(**{**plain.__dict__, "tests": {**plain.tests, "comparator": {"mode": "tokens"}}})
    interactive = RunRequest(**{**plain.__dict__, "tests": {**plain.tests, "comparator": {
        "mode": "interactor", "language": "c", "source": RELAY_C}}})  # fmt: skip
    timed(pool, interactive)  # both built once
    with_interactor, with_tokens = [], []
    for _ in range(repeats):
        with_interactor.append(timed(pool, interactive))
        with_tokens.append(timed(pool, tokens))
    return statistics.median(with_interactor) / statistics.median(with_tokens), statistics.median(with_interactor)


def bare_dir(language: str) -> tuple[Path, list[str], dict[str, str]]:
    """The built program laid out in a host directory, and its command there."""
    ready = programs.prepared(request(language, SUM[language], 1), lambda r: engine.run(r, backend="bwrap"), "bwrap")
    if not isinstance(ready, RunRequest) or ready.program is None:
        raise RuntimeError(f"{language} did not build: {ready}")
    program = ready.program
    where = Path(tempfile.mkdtemp(dir=SCRATCH, prefix=f"bare-{language}-"))
    for name, encoded in program["files"].items():
        (where / name).write_bytes(base64.b64decode(encoded))
        (where / name).chmod(0o755 if name in program["executable"] else 0o644)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(where), "LANG": "C.UTF-8"}
    env.update({k: v.replace("{run_dir}", str(where)) for k, v in program["env"].items()})
    return where, list(program["argv"]), env


def bare_once(where: Path, argv: list[str], env: dict[str, str], case: dict) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, input=case["input"].encode(), capture_output=True, cwd=where, env=env,
                          timeout=20, check=False)  # fmt: skip
    elapsed = time.perf_counter() - started
    if done.stdout.decode().split() != case["output"].split():
        raise RuntimeError(f"bare {argv[0]}: {done.stdout[:200]!r} {done.stderr[:300]!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    pool = SandboxPool(engine.sandbox_factory("bwrap"), size=max(1, args.workers))
    figures: dict = {}
    passed = function_passed = 0
    bare_programs = {}
    try:
        for language in SUM:
            entry = languages.language(language)
            say(f"{language}: {languages.toolchain(language).version}")
            try:
                timed(pool, request(language, SUM[language], 3))  # builds and checks it
            except RuntimeError as exc:
                say(f"  sample failed: {exc}")
                continue
            passed += 1
            where, argv, env = bare_program = bare_dir(language)
            bare_programs[language] = bare_program
            # Taking turns, so a stretch of noise on the host weighs on both sides alike.
            ones, bares = [], []
            for _ in range(ONE_CASE_TURNS * args.repeats):
                ones.append(timed(pool, request(language, SUM[language], 1)))
                bares.append(bare_once(where, argv, env, cases(1)[0]))
            one, bare = statistics.median(ones), statistics.median(bares)
            hundred = statistics.median(timed(pool, request(language, SUM[language], 100)) for _ in range(3))
            figures[f"sandboxed_over_bare_{language}"] = round(one / bare, 3)
            figures[f"per_case_ms_{language}"] = round((hundred - one) / 99 * 1000, 2)
            if entry.compiled:
                misses = []
                for attempt in range(3):
                    fresh = SUM[language] + f"\n// miss {attempt} {time.time_ns()}\n"  # every compiled one has //
                    misses.append(timed(pool, request(language, fresh, 100)))
                figures[f"compile_cache_hit_over_miss_{language}"] = round(hundred / statistics.median(misses), 3)
            say(f"  one case {one * 1000:.1f} ms (bare {bare * 1000:.1f} ms), 100 cases {hundred * 1000:.0f} ms")
            try:
                timed(pool, calls_request(language, 3))  # builds solution + driver, and checks it
                call = statistics.median(timed(pool, calls_request(language, 1)) for _ in range(3))
                calls = statistics.median(timed(pool, calls_request(language, 100)) for _ in range(3))
            except RuntimeError as exc:
                say(f"  function sample failed: {exc}")
                continue
            function_passed += 1
            per_call = (calls - call) / 99
            figures[f"function_case_over_stdio_case_{language}"] = round(per_call / ((hundred - one) / 99), 3)
            say(f"  100 calls {calls * 1000:.0f} ms: {per_call * 1000:.2f} ms a call")

        for checker_language, checker in (("cpp17", TOKENS_CPP), ("python", TOKENS_PYTHON)):
            ratio = round(checker_overhead(pool, checker_language, checker, args.repeats), 3)
            figures[f"checker_overhead_{checker_language}"] = ratio
            say(f"checker ({checker_language}) over tokens: {ratio}")
        figures["checker_overhead"] = figures["checker_overhead_cpp17"]
        ratio, interactive_s = interactive_overhead(pool, args.repeats)
        figures["interactive_overhead"] = round(ratio, 3)
        figures["interactive_run_ms"] = round(interactive_s * 1000, 1)
        say(f"interactor (C) over tokens: {ratio:.3f} ({interactive_s * 1000:.1f} ms for 10 cases)")

        # 200 checks cycling through the languages, sandboxed and bare.
        order = [language for _ in range(200) for language in bare_programs][:200]
        started = time.perf_counter()
        with ThreadPoolExecutor(args.workers) as workers:
            list(workers.map(lambda lang: timed(pool, request(lang, SUM[lang], 1)), order))
        sandboxed_rate = len(order) / (time.perf_counter() - started)
        started = time.perf_counter()
        with ThreadPoolExecutor(args.workers) as workers:
            list(workers.map(lambda lang: bare_once(*bare_programs[lang], cases(1)[0]), order))
        bare_rate = len(order) / (time.perf_counter() - started)
        figures.update({
            "mixed_checks_per_s": round(sandboxed_rate, 1),
            "mixed_checks_per_s_bare": round(bare_rate, 1),
            "mixed_checks_over_bare": round(sandboxed_rate / bare_rate, 3),
            "languages": passed,
            "function_languages": function_passed,
            "compile_cache": dict(compile_cache.hits),
            "cores": os.cpu_count(),
            "workers": args.workers,
        })  # fmt: skip
    finally:
        pool.close()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

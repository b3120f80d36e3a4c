"""Run a catalogue task's solutions against its own test suites, for the catalogue's tests.

This checks the catalogue's DATA: that every reference solution passes its
visible and hidden tests, and that every adversarial solution is caught. It
is not the platform's sandbox (that isolates untrusted code, lives under
evaluation/ and comes later). The code here is our own, so a plain child
process per run is enough: `subprocess.run([sys.executable, ...])` in a
fresh temporary directory, with a clean environment and a timeout.

Each suite kind runs the way its harness will:

- assertions: solution.py plus a driver that runs test_setup, imports the
  solution's names and executes each assert on its own;
- check_function: exec the solution, exec each check module, call
  `check(<entry_point>)`;
- pytest: solution.py and test_suite.py, `python -m pytest -q test_suite.py`;
- stdio: `python solution.py` per case, output compared after stripping
  trailing whitespace on each line and trailing newlines. A task in another
  language is built once per source with its toolchain's own commands
  (evaluation/sandbox/languages.py) and its program run per case; a task judged
  by a checker runs the checker on (input, output, answer) files per case and
  reads its testlib exit code (0 accepted); an interactive task runs the solution
  and its interactor on two pipes per case (the interactor's exit 0 accepts);
- function_calls: the solution with its language's driver (evaluation/sandbox/drivers/),
  built once and run per test with the arguments on stdin, its result read and
  compared by the declared type as the judge does (harness/call_values.py).

A run that leaves no result record (the solution called `sys.exit`, or
crashed the driver) counts as failed, never as passed.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks_app.content import VersionContent

MAX_DETAIL = 300

_DRIVER = r"""
import json, linecache, sys, traceback

def describe(exc):
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__

def where(exc, filename):
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == filename and frame.line:
            return f" at line {frame.lineno}: {frame.line.strip()}"
    return ""

def register(filename, source):
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)

def main():
    spec = json.load(open("spec.json", encoding="utf-8"))
    results = []
    namespace = {"__name__": "__catalogue_tests__"}
    try:
        register("test_setup", spec["setup"])
        exec(compile(spec["setup"], "test_setup", "exec"), namespace)
        if spec["kind"] == "assertions":
            import solution
            namespace.update({k: v for k, v in vars(solution).items() if not k.startswith("__")})
        else:
            solution_ns = {"__name__": "solution"}
            register("solution.py", spec["solution"])
            exec(compile(spec["solution"], "solution.py", "exec"), solution_ns)
            candidate = solution_ns[spec["entry_point"]]
    except BaseException as exc:  # SystemExit included: an early exit is a failure
        results = [[i, f"setup or import failed: {describe(exc)}"] for i in range(len(spec["cases"]))]
    else:
        for index, case in enumerate(spec["cases"]):
            filename = f"case {index}"
            register(filename, case)
            try:
                if spec["kind"] == "assertions":
                    exec(compile(case, filename, "exec"), namespace)
                else:
                    check_ns = dict(namespace)
                    exec(compile(case, filename, "exec"), check_ns)
                    check_ns["check"](candidate)
            except BaseException as exc:
                results.append([index, f"{describe(exc)}{where(exc, filename)}"])
            else:
                results.append([index, None])
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump(results, out)

main()
"""


@dataclass(frozen=True)
class SuiteResult:
    """The outcome of one solution against one suite (visible or hidden)."""

    cases: int
    failures: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass
class TaskVerdict:
    slug: str
    # (solution label, role, suite name) -> result
    results: dict[tuple[str, str, str], SuiteResult] = field(default_factory=dict)

    def reference_problems(self) -> list[str]:
        return [
            f"reference {label!r} fails {suite}: {'; '.join(result.failures)}"
            for (label, role, suite), result in sorted(self.results.items())
            if role == "reference" and not result.passed
        ]

    def uncaught_adversarials(self) -> list[str]:
        """Adversarials the hidden suite lets through. Being caught only by a timeout does not count:
        the catalogue's wrong solutions are wrong in output, and a slow machine must not decide."""
        return [
            f"adversarial {label!r} passes all {result.cases} hidden case(s) or only times out"
            for (label, role, suite), result in sorted(self.results.items())
            if role == "adversarial"
            and suite == "hidden"
            and all(failure.endswith("timed out") or "timed out after" in failure for failure in result.failures)
        ]

    def adversarials_failing_visible(self) -> list[str]:
        return [
            f"adversarial {label!r} already fails visible: {'; '.join(result.failures)}"
            for (label, role, suite), result in sorted(self.results.items())
            if role == "adversarial" and suite == "visible" and not result.passed
        ]


def _env(home: str) -> dict[str, str]:
    # A clean environment: nothing of the test run's (DJANGO_SETTINGS_MODULE,
    # DATABASE_URL) leaks in, and no installed pytest plugin (pytest-django)
    # loads into a suite that knows nothing of Django.
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONUTF8": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }


def _short(text: str) -> str:
    text = " | ".join(line.strip() for line in text.strip().splitlines())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."


def normalise_output(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.splitlines()).rstrip("\n")


def _run_driven(content: VersionContent, code: str, tests: list[Any], tmp: Path, timeout: float) -> SuiteResult:
    spec = {
        "kind": content.suite_kind,
        "setup": content.test_setup,
        "solution": code,
        "entry_point": content.entry_point,
        "cases": tests,
    }
    (tmp / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    (tmp / "solution.py").write_text(code, encoding="utf-8")
    (tmp / "driver.py").write_text(_DRIVER, encoding="utf-8")
    result_path = tmp / "result.json"
    # The timeout covers the whole suite: every case of one suite runs in one process.
    limit = timeout * max(1, len(tests))
    try:
        proc = subprocess.run(
            [sys.executable, "driver.py", str(result_path)],
            cwd=tmp,
            env=_env(str(tmp)),
            capture_output=True,
            text=True,
            timeout=limit,
        )
    except subprocess.TimeoutExpired:
        return SuiteResult(len(tests), (f"timed out after {limit:g}s",))
    if not result_path.exists():
        return SuiteResult(len(tests), (f"no result record (exit {proc.returncode}): {_short(proc.stderr)}",))
    records = json.loads(result_path.read_text(encoding="utf-8"))
    if len(records) != len(tests):
        return SuiteResult(len(tests), (f"incomplete result record: {len(records)} of {len(tests)} cases",))
    failures = tuple(f"case {index}: {_short(message)}" for index, message in records if message is not None)
    return SuiteResult(len(tests), failures)


_PYTEST_FAILED = re.compile(r"^(FAILED|ERROR) (.*)$", re.MULTILINE)
_PYTEST_PASSED = re.compile(r"(\d+) passed")


def _run_pytest(content: VersionContent, code: str, tests: list[Any], tmp: Path, timeout: float) -> SuiteResult:
    failures: list[str] = []
    passed = 0
    for index, module in enumerate(tests):
        (tmp / "solution.py").write_text(code, encoding="utf-8")
        source = f"{content.test_setup}\n{module}" if content.test_setup else module
        (tmp / "test_suite.py").write_text(source, encoding="utf-8")
        # An empty ini file stops pytest from looking for configuration above tmp.
        (tmp / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_suite.py"],
                cwd=tmp,
                env=_env(str(tmp)),
                capture_output=True,
                text=True,
                timeout=timeout * 3,  # pytest's own start-up is part of the run
            )
        except subprocess.TimeoutExpired:
            failures.append(f"module {index}: timed out")
            continue
        found = _PYTEST_PASSED.search(proc.stdout)
        passed += int(found.group(1)) if found else 0
        if proc.returncode != 0:
            named = [_short(m.group(2)) for m in _PYTEST_FAILED.finditer(proc.stdout)]
            detail = named or [f"pytest exited {proc.returncode}: {_short(proc.stdout[-MAX_DETAIL:])}"]
            failures.extend(f"module {index}: {line}" for line in detail)
    return SuiteResult(max(passed + len(failures), len(tests)), tuple(failures))


_BUILT: dict[tuple[str, str], Path] = {}
_BUILD_LOCK = threading.Lock()


def _program(language: str, code: str, tmp: Path) -> list[str]:
    """The command that runs `code` in `tmp`: Python's own interpreter, or another
    language's program, built once per source (in a directory kept for the process)."""
    if language == "python":
        (tmp / "solution.py").write_text(code, encoding="utf-8")
        return [sys.executable, "solution.py"]
    from evaluation.sandbox.languages import toolchain

    chain = toolchain(language)
    entry = chain.language
    with _BUILD_LOCK:
        built = _BUILT.get((language, code))
        if built is None:
            built = Path(tempfile.mkdtemp(prefix=f"catalogue-build-{language}-"))
            (built / entry.source_file).write_text(code, encoding="utf-8")
            for name, text in entry.extra_files.items():
                (built / name).write_text(text, encoding="utf-8")
            if entry.compile:
                done = subprocess.run(chain.argv(entry.compile, memory_mb=1024), cwd=built,
                                      env={**_env(str(built)), **chain.env(str(built))}, capture_output=True,
                                      text=True, timeout=120)  # fmt: skip
                if done.returncode != 0:
                    raise BuildFailed(_short((done.stdout + done.stderr)[-MAX_DETAIL:]))
            _BUILT[(language, code)] = built
    for path in built.iterdir():
        if path.is_file():
            shutil.copy2(path, tmp / path.name)
    return chain.argv(entry.run, memory_mb=256)


class BuildFailed(Exception):
    """The compiler refused a catalogue solution (or checker)."""


def _ran(argv: list[str], *, input: str, timeout: float, **options: Any) -> subprocess.CompletedProcess:
    """subprocess.run, through _started (a busy binary is retried)."""
    with _started(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **options) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _checked(checker: dict[str, Any], case: dict[str, str], output: str, tmp: Path) -> str | None:
    """What the task's checker says of `output` (None: accepted)."""
    where = tmp / "checker"
    where.mkdir(exist_ok=True)
    argv = _program(checker["language"], checker["source"], where)
    files = []
    for name, text in (("input", case["input"]), ("output", output), ("answer", case["output"])):
        (where / f"case.{name}").write_text(text, encoding="utf-8")
        files.append(str(where / f"case.{name}"))
    done = _ran([*argv, *files], input="", cwd=where, env=_env(str(where)), text=True, errors="replace",
                timeout=30)  # fmt: skip
    if done.returncode == 0:
        return None
    return f"the checker says (exit {done.returncode}): {_short((done.stderr or done.stdout)[-MAX_DETAIL:])}"


def _started(argv: list[str], **options: Any) -> subprocess.Popen:
    """Popen, again while the program is busy: another thread's fork may still hold a
    just-copied binary open for writing (ETXTBSY) until that child execs."""
    for attempt in range(50):
        try:
            return subprocess.Popen(argv, **options)
        except OSError as exc:
            if exc.errno != errno.ETXTBSY or attempt == 49:
                raise
            time.sleep(0.02)
    raise AssertionError("unreachable")


def _interact(content: VersionContent, argv: list[str], case: dict[str, str], tmp: Path, timeout: float) -> str | None:
    """The solution and the task's interactor on two pipes; what went wrong, or None."""
    interactor = content.comparator
    where = tmp / "interactor"
    where.mkdir(exist_ok=True)
    judge_argv = _program(interactor["language"], interactor["source"], where)
    files = []
    for name, text in (("input", case["input"]), ("output", ""), ("answer", case["output"])):
        (where / f"case.{name}").write_text(text, encoding="utf-8")
        files.append(str(where / f"case.{name}"))
    to_solution_r, to_solution_w = os.pipe()
    from_solution_r, from_solution_w = os.pipe()
    try:
        judge = _started([*judge_argv, *files], cwd=where, env=_env(str(where)), stdin=from_solution_r,
                         stdout=to_solution_w, stderr=subprocess.PIPE, text=True)  # fmt: skip
        solution = _started(argv, cwd=tmp, env=_env(str(tmp)), stdin=to_solution_r, stdout=from_solution_w,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    finally:
        for fd in (to_solution_r, to_solution_w, from_solution_r, from_solution_w):
            os.close(fd)
    try:
        solution.wait(timeout=timeout)
        said = judge.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        solution.kill()
        judge.kill()
        return f"timed out after {timeout:g}s"
    if judge.returncode != 0:
        return f"the interactor says (exit {judge.returncode}): {_short(said[-MAX_DETAIL:])}"
    if solution.returncode != 0:
        return f"exit {solution.returncode}"
    return None


def _run_stdio(content: VersionContent, code: str, tests: list[Any], tmp: Path, timeout: float) -> SuiteResult:
    try:
        argv = _program(content.language, code, tmp)
    except BuildFailed as exc:
        return SuiteResult(len(tests), (f"does not compile: {exc}",))
    if content.comparator.get("mode") == "interactor":
        said = [_interact(content, argv, case, tmp, timeout) for case in tests]
        return SuiteResult(len(tests), tuple(f"case {i}: {s}" for i, s in enumerate(said) if s is not None))
    checker = content.comparator if content.comparator.get("mode") == "checker" else None
    failures: list[str] = []
    for index, case in enumerate(tests):
        try:
            proc = _ran(
                argv,
                cwd=tmp,
                env=_env(str(tmp)),
                input=case["input"],
                text=True,
                errors="replace",  # a wrong program may write bytes that are not UTF-8
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            failures.append(f"case {index}: timed out after {timeout:g}s")
            continue
        if proc.returncode != 0:
            failures.append(f"case {index}: exit {proc.returncode}: {_short(proc.stderr[-MAX_DETAIL:])}")
        elif checker is not None:
            said = _checked(checker, case, proc.stdout, tmp)
            if said is not None:
                failures.append(f"case {index}: input {_short(repr(case['input']))}: {said}")
        elif normalise_output(proc.stdout) != normalise_output(case["output"]):
            failures.append(
                f"case {index}: input {_short(repr(case['input']))}: expected {_short(repr(case['output']))}, "
                f"got {_short(repr(proc.stdout))}"
            )
    return SuiteResult(len(tests), tuple(failures))


def _run_calls(content: VersionContent, code: str, tests: list[Any], tmp: Path, timeout: float) -> SuiteResult:
    from evaluation.sandbox import drivers
    from evaluation.sandbox.harness import call_values

    source = drivers.program_source(content.language, content.signature, content.entry_point, code)
    try:
        argv = _program(content.language, source, tmp)
    except BuildFailed as exc:
        return SuiteResult(len(tests), (f"does not compile: {exc}",))
    # The task's float tolerances, if any, in the judge's own `values` mode.
    comparator = {**content.comparator, "mode": "values", "returns": content.signature["returns"]}
    failures: list[str] = []
    for index, case in enumerate(tests):
        given = drivers.encode_args(content.signature, case["args"])
        try:
            proc = _ran(argv, cwd=tmp, env=_env(str(tmp)), input=given, text=True, errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            failures.append(f"case {index}: timed out after {timeout:g}s")
            continue
        said = (
            f"exit {proc.returncode}: {_short(proc.stderr[-MAX_DETAIL:])}"
            if proc.returncode != 0
            else call_values.mismatch(comparator, case["expected"], proc.stdout)
        )
        if said is not None:
            failures.append(f"case {index}: args {_short(repr(case['args']))}: {said}")
    return SuiteResult(len(tests), tuple(failures))


_RUNNERS = {
    "function_calls": _run_calls,
    "assertions": _run_driven,
    "check_function": _run_driven,
    "pytest": _run_pytest,
    "stdio": _run_stdio,
}


def run_suite(content: VersionContent, code: str, tests: list[Any]) -> SuiteResult:
    """Run `code` against `tests` (a visible or hidden suite of `content`)."""
    if not tests:
        return SuiteResult(0)
    with tempfile.TemporaryDirectory(prefix="catalogue-run-") as tmp:
        return _RUNNERS[content.suite_kind](content, code, tests, Path(tmp), float(content.time_limit_s))


def verify(entries: Iterable[tuple[str, VersionContent]], *, workers: int | None = None) -> dict[str, TaskVerdict]:
    """Run every solution of every (slug, content) against its visible and hidden suites, concurrently."""
    verdicts: dict[str, TaskVerdict] = {}
    jobs: list[tuple[str, str, str, str, VersionContent, str, list[Any]]] = []
    for slug, content in entries:
        verdicts[slug] = TaskVerdict(slug)
        for solution in content.solutions:
            for suite, tests in (("visible", content.visible_tests), ("hidden", content.hidden_tests)):
                jobs.append((slug, solution.label, solution.role, suite, content, solution.code, tests))
    # Threads suffice: each job waits on its own child process.
    with ThreadPoolExecutor(max_workers=workers or max(4, (os.cpu_count() or 2) * 2)) as pool:
        futures = [(job, pool.submit(run_suite, job[4], job[5], job[6])) for job in jobs]
        for (slug, label, role, suite, *_), future in futures:
            verdicts[slug].results[(label, role, suite)] = future.result()
    return verdicts

"""Programs in languages other than Python: built once, run by every request after.

`prepared(request, run)` turns a request in another language into one the harness
can run: the command from the language's entry (languages.py) and the files to lay
out, which for a compiled language are the artifacts of its compile. A compile is
a run of its own (the `compile` kind: the compiler inside a sandbox, under the
compile limits), done once per (language, toolchain fingerprint, source hash) on
this host and kept in the compile cache (compile_cache.py), so the repeats,
mutant re-runs and rewards of one source share it, and a suite of 100 cases pays
for one compile, not 100.

A source the compiler refuses comes back as a RunResult with status
`compile_error` and the compiler's message; that is cached too (the same source
fails the same way). A compile that ended in `sandbox_error` is not cached and is
the request's result: nothing was decided about the solution.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
from collections.abc import Callable
from typing import Any

from evaluation.sandbox import compile_cache
from evaluation.sandbox.languages import OOM_MARKERS, PYTHON, Language, LanguageUnavailable, Toolchain, toolchain
from evaluation.sandbox.types import Limits, RunRequest, RunResult, Status

# The compile's own limits: generous, separate from the run's, and still limits.
COMPILE_LIMITS = dict(wall_s=60.0, cpu_s=60.0, processes=64, output_bytes=1 << 20, file_bytes=256 << 20)


def compile_limits(entry: Language) -> Limits:
    return Limits(memory_mb=entry.compile_memory_mb, **COMPILE_LIMITS)


def prepared(request: RunRequest, run: Callable[[RunRequest], RunResult], backend: str) -> RunRequest | RunResult:
    """`request` with its program filled in, or the RunResult that ends it (a compile
    error, or the compile's sandbox error). `run` executes a request (engine.run's
    own path, with the caller's backend and pool). Python requests come back as they are.
    A toolchain this host or backend lacks is `sandbox_error`: nothing of the solution's ran."""
    if request.program is not None:
        return request
    if request.language == PYTHON:
        # A Python checker is a program like any other's (its files as arguments);
        # every other Python request runs in the zygote's own interpreter.
        return _python_program(request) if request.suite_kind in PROGRAM_KINDS else request
    try:
        chain = toolchain(request.language)
        built_by = _builder_fingerprint(chain, backend)
    except LanguageUnavailable as exc:
        return _ended(request, None, Status.SANDBOX_ERROR, str(exc))
    entry = chain.language
    source = request.solution.encode("utf-8")
    files: dict[str, str]
    if entry.compiled:
        key = compile_cache.key(entry.name, built_by, source)
        built = compile_cache.get(key)
        if built is None:
            result = run(compile_request(request, chain))
            if result.status == Status.SANDBOX_ERROR:
                message = f"compiling failed in the sandbox: {result.message}"
                return _ended(request, result, Status.SANDBOX_ERROR, message)
            built = compile_cache.entry_from(result)
            compile_cache.put(key, built)
        if built["status"] != "ok":
            return _ended(request, None, Status.COMPILE_ERROR, built["message"], fingerprint=chain.fingerprint)
        files = dict(built["artifacts"])
        # Hashed once per build, not per run (megabytes for a Go binary): kept with the entry in memory.
        if "digests" not in built:
            built["digests"] = _digests(files)
        digests = built["digests"]
    else:
        files = {entry.source_file: base64.b64encode(source).decode()}
        digests = _digests(files)
    program = _program(entry, chain, request.limits, files)
    # What a warm sandbox keeps each file by (base.SupervisorSandbox): sent once, referred to after.
    program["digests"] = dict(digests)
    return dataclasses.replace(request, program=program)


def _builder_fingerprint(chain: Toolchain, backend: str) -> str:
    """What a build is keyed by besides the source: the host's toolchain under bwrap (it
    binds the host's /usr); under Docker the image's too, whose toolchain built it (the
    same Debian packages, but an image is rebuilt on its own schedule)."""
    if backend == "bwrap":
        return chain.fingerprint
    if backend == "docker":
        from evaluation.sandbox.docker_backend import image_id

        return f"{chain.fingerprint}+{image_id()}"
    raise LanguageUnavailable(f"the {backend} backend has no toolchains: run {chain.language.title} on bwrap or docker")


PYTHON_RUN = ("/usr/bin/python3", "-S", "-B", "main.py")  # /usr/bin/python3: in both backends' /usr
# Run kinds whose Python program is run by command, with arguments (not in the zygote's interpreter).
PROGRAM_KINDS = ("check", "interactor", "generate", "validate")


def _python_program(request: RunRequest) -> RunRequest:
    files = {"main.py": base64.b64encode(request.solution.encode("utf-8")).decode()}
    program = {"language": PYTHON, "fingerprint": "", "argv": list(PYTHON_RUN), "env": {}, "files": files,
               "executable": [], "memory": "as", "memory_overhead_mb": 0, "oom_markers": ["MemoryError"],
               "digests": _digests(files)}  # fmt: skip
    return dataclasses.replace(request, program=program)


def _digests(files: dict[str, str]) -> dict[str, str]:
    return {name: hashlib.sha256(data.encode()).hexdigest() for name, data in files.items()}


def compile_request(request: RunRequest, chain: Toolchain) -> RunRequest:
    """The compile run of `request`'s source."""
    entry = chain.language
    limits = compile_limits(entry)
    files = {entry.source_file: base64.b64encode(request.solution.encode("utf-8")).decode()}
    files.update({name: base64.b64encode(text.encode()).decode() for name, text in entry.extra_files.items()})
    program = _program(entry, chain, limits, files)
    program["compile"] = chain.argv(entry.compile or (), memory_mb=limits.memory_mb)
    program["artifacts"] = list(entry.artifacts)
    # The compiler's own memory: its address space is no measure (rustc and the JVM reserve gigabytes).
    program["memory"], program["memory_overhead_mb"] = "data", 0
    return RunRequest(suite_kind="compile", solution=request.solution, tests={}, limits=limits,
                      seed=request.seed, language=request.language, program=program)  # fmt: skip


def _program(entry: Language, chain: Toolchain, limits: Limits, files: dict[str, str]) -> dict[str, Any]:
    executable = [name for name in files if name in ("main",) or os.path.splitext(name)[1] == ""]
    return {
        "language": entry.name,
        "fingerprint": chain.fingerprint,
        "argv": chain.argv(entry.run, memory_mb=limits.memory_mb),
        "env": dict(entry.env),
        "files": files,
        "executable": executable,
        "memory": entry.memory,
        "memory_overhead_mb": entry.memory_overhead_mb,
        "oom_markers": list(OOM_MARKERS),
    }


def _ended(request: RunRequest, result: RunResult | None, status: Status, message: str,
           fingerprint: str = "") -> RunResult:  # fmt: skip
    ended = RunResult(status=status, message=message[:8000], seed=request.seed, repeat=request.repeat)
    if result is not None:
        for name in ("backend", "sandbox_id", "runtime_fingerprint", "harness_version", "wall_s", "cpu_s",
                     "request_digest", "anomaly", "attempts"):  # fmt: skip
            setattr(ended, name, getattr(result, name))
    else:
        ended.runtime_fingerprint = fingerprint
    return ended

"""Programs in other languages than Python, as the judge runs them.

The host resolves the language (evaluation/sandbox/languages.py) and sends, in the
run's `program`, everything the harness needs and nothing it must know about
languages: the command, the environment, the files to lay out in the run
directory (the source, or the compiled artifacts), how memory is held, and the
stderr lines that mean the runtime ran out of memory.

Two uses:
- the `compile` run kind: lay out the source, run the compiler as a solution
  process (its own limits, in the sandbox: a compiler can be attacked), and hand
  back the artifacts it left, or `compile_error` with what it said;
- any program run (the stdio kind): lay out the artifacts once, then each test
  execs the command in a fresh solution process.
"""

from __future__ import annotations

import binascii
import errno
import fcntl
import os
import time

from . import held_files, lite, scratch
from .outcomes import CandidateFailure

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

    from .judge import Child, Judge

# Most bytes of the artifacts a compile may hand back (a Go binary is ~2 MB).
MAX_ARTIFACT_BYTES = 64 << 20
COMPILER_MESSAGE_CHARS = 8000
MFD_EXEC = 0x10  # Linux 6.3's flag: say the copy is meant to be executed (os has no name for it)
SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
# A failed exit whose peak memory was past this share of the limit ran out of memory: a
# program that checks malloc's NULL exits as it likes, but it exits there. (Shared
# libraries and the runtime take their part of the address space, so the peak never
# reaches the limit itself.)
NEAR_LIMIT = 0.8


def spec(judge: Judge) -> dict[str, Any] | None:
    """The run's program, or None for a Python one (run by the zygote's own interpreter)."""
    program = judge.run_spec.get("program")
    return program if isinstance(program, dict) else None


def lay_out(program: dict[str, Any], *, skip: str | None = None) -> None:
    """Write the program's files into the run directory (once a run), but `skip`: the
    built program where solution processes exec a held sealed copy instead. A file is
    its base64 text as sent, or its bytes where the sandbox holds it (held_files.py)."""
    run_dir = scratch.RUN_DIR
    for name, encoded in (program.get("files") or {}).items():
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"a program file may not be named {name!r}")
        if name == skip:
            continue
        path = os.path.join(run_dir, name)
        with open(path, "wb") as handle:
            handle.write(binascii.a2b_base64(encoded) if isinstance(encoded, str) else encoded)
        os.chmod(path, 0o755 if name in (program.get("executable") or ()) else 0o644)
    check_runnable(program)


def check_runnable(program: dict[str, Any]) -> None:
    """Raise RuntimeError, a fault of the sandbox's, when the program could not start here:
    its interpreter or compiler missing.
    Checked by the judge before any of the solution's code runs: an exit code 127 that
    says "cannot start" could be the solution's own, so it is never taken as evidence."""
    commands = [program.get("argv") or [], program.get("compile") or []]
    for argv in commands:
        if argv and str(argv[0]).startswith("/") and not os.access(str(argv[0]), os.X_OK):
            raise RuntimeError(f"{argv[0]} is missing in this sandbox: its toolchain is not installed here")


def order(program: dict[str, Any], argv: list[str], *, exe: bool = False) -> str:
    """What the zygote's solution process reads to exec the program (its `exec` mode);
    `exe`: the built program comes as a descriptor, first of its descriptors."""
    run_dir = scratch.RUN_DIR
    env = {key: str(value).replace("{run_dir}", run_dir) for key, value in (program.get("env") or {}).items()}
    return lite.dumps({"argv": argv, "env": env, "memory": program.get("memory") or "as", "exe": exe,
                       "memory_overhead_mb": int(program.get("memory_overhead_mb") or 0)})  # fmt: skip


def built_program(program: dict[str, Any]) -> str | None:
    """The path of the built program the command starts (`./main`, one of the files the
    host laid out executable), or None where it starts an interpreter from /usr."""
    name = _built_name(program)
    return os.path.join(scratch.RUN_DIR, name) if name else None


def _built_name(program: dict[str, Any]) -> str | None:
    first = str((program.get("argv") or [""])[0])
    name = first[2:] if first.startswith("./") else ""
    return name if name and name in (program.get("executable") or ()) else None


def held_executable(program: dict[str, Any]) -> tuple[str, int] | None:
    """(name, descriptor) of the built program as a sealed in-memory copy the sandbox
    keeps between runs, made from its held bytes on first use (held_files.py); None
    where it is not held (then the run lays it out and opens it: open_built). The copy
    is sealed against writes, growth and shrinking before any solution process sees it,
    so one run's processes cannot change what a later run execs."""
    name = _built_name(program)
    digest = str((program.get("digests") or {}).get(name) or "") if name else ""
    data = held_files.held(digest) if digest else None
    if data is None:
        return None
    fd = held_files.sealed(digest)
    if fd is None:
        try:
            fd = _sealed_copy(data)
        except OSError:
            return None  # laid out and opened as a file instead
        held_files.keep_sealed(digest, fd)
    return name, os.dup(fd)


def _memfd() -> int:
    try:
        return os.memfd_create("program", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING | MFD_EXEC)
    except OSError as exc:
        if exc.errno != errno.EINVAL:  # EINVAL: a kernel older than MFD_EXEC, whose memfds are exec
            raise
        return os.memfd_create("program", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)


def _sealed_copy(data: bytes) -> int:
    fd = _memfd()
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    except OSError:
        os.close(fd)
        raise
    return fd


def open_built(program: dict[str, Any]) -> int | None:
    """A descriptor of the built program that solution processes exec, opened once a run;
    None where the command starts an interpreter. Solution processes see the scratch
    noexec (bwrap: confine.py; Docker mounts it so), so they exec this descriptor,
    never a path: opened here where the judge's own view is exec (bwrap), or, where it
    is noexec too (Docker), a sealed in-memory copy, which no one can write again."""
    built = built_program(program)
    if built is None:
        return None
    fd = os.open(built, os.O_RDONLY | os.O_CLOEXEC)
    if not os.fstatvfs(fd).f_flag & os.ST_NOEXEC:
        return fd
    try:
        copy = _memfd()
        size = os.fstat(fd).st_size
        while os.sendfile(copy, fd, None, size - os.lseek(copy, 0, os.SEEK_CUR)) > 0:
            pass
        fcntl.fcntl(copy, fcntl.F_ADD_SEALS, SEALS)
    except OSError as exc:
        raise RuntimeError(f"the built program cannot be made executable in this sandbox: {exc}") from exc
    finally:
        os.close(fd)
    return copy


def spawn(judge: Judge, *, stdin: bool, args: list[str] | None = None, wired: tuple[int, int] | None = None) -> Child:
    """A fresh process of the run's program (Python's or another language's), with
    `args` after its command (a checker's files: only for a program the host laid out),
    and its stdin and stdout `wired` to given descriptors where an interactive run says."""
    program = spec(judge)
    if program is None:
        if args:
            raise ValueError("arguments are only for a program with a command (the run's `program`)")
        return judge.spawn("program", stdin=stdin, wired=wired)
    if not judge.program_laid_out:
        held = held_executable(program)
        lay_out(program, skip=held[0] if held else None)
        judge.program_exe = held[1] if held else open_built(program)
        judge.program_laid_out = True
    exe = None if judge.program_exe is None else os.dup(judge.program_exe)
    source = order(program, [*program["argv"], *(args or ())], exe=exe is not None)
    return judge.spawn("exec", stdin=stdin, source=source, wired=wired, exe=exe, memory_mb=memory_mb(judge, program))


def memory_mb(judge: Judge, program: dict[str, Any]) -> int:
    """What a process of `program` may hold: the run's memory and its runtime's overhead."""
    return int(judge.limits["memory_mb"]) + int(program.get("memory_overhead_mb") or 0)


def ran_out_of_memory(judge: Judge, child: Child, status: dict[str, Any]) -> bool:
    """Evidence that a failed exit was the memory limit: the exec refused for memory,
    the runtime's own out-of-memory message, or a peak past NEAR_LIMIT of the limit."""
    if status.get("memory_exceeded"):
        return True
    if not (status.get("signal") or status.get("code")):
        return False
    program = spec(judge) or {}
    text = child.err.text()[-20000:] + child.out.text()[-2000:]  # the JVM says it on stdout
    if any(marker in text for marker in program.get("oom_markers") or ()):
        return True
    limit_kb = (int(judge.limits["memory_mb"]) + int(program.get("memory_overhead_mb") or 0)) * 1024
    return int(status.get("maxrss_kb") or 0) >= NEAR_LIMIT * limit_kb


def compile_run(judge: Judge) -> None:
    """The compile kind: build the program, leave its artifacts in judge.data."""
    program = spec(judge)
    if program is None:
        raise ValueError("a compile run needs its program")
    lay_out(program)
    started = time.monotonic()
    child = judge.spawn("exec", source=order(program, list(program["compile"])), memory_mb=memory_mb(judge, program))
    child.out.join(max(0.0, judge.remaining()))
    if child.out.is_alive():
        judge.kill(child)
        raise CandidateFailure("compile", f"the compiler ran past the {judge.limits['wall_s']} s compile limit")
    status = judge.reap(child)
    child.err.join(1.0)
    said = (child.out.text() + child.err.text()).strip()
    judge.mark("compiled")
    if status.get("cpu_exceeded"):
        raise CandidateFailure("compile", f"the compiler used up its {judge.limits['cpu_s']} s of CPU time")
    if child.out.exceeded or child.err.exceeded:
        raise CandidateFailure("compile", f"the compiler wrote more than {judge.output_cap} bytes")
    if status.get("code") == 127 and said.startswith("cannot start "):
        # The compiler is not where the host's language table says (nothing of the
        # solution's has run yet): this sandbox lacks the toolchain, a fault of ours.
        raise RuntimeError(f"the compiler is missing in this sandbox: {said[:300]}")
    if status.get("memory_exceeded") or (status.get("code") or status.get("signal")):
        how = _how(status, judge)
        raise CandidateFailure("compile", f"{how}\n{said[-COMPILER_MESSAGE_CHARS:]}".strip())
    artifacts = {}
    total = 0
    for pattern in program.get("artifacts") or ():
        for name in sorted(_matching(pattern)):
            with open(os.path.join(scratch.RUN_DIR, name), "rb") as handle:
                data = handle.read(MAX_ARTIFACT_BYTES + 1)
            total += len(data)
            if total > MAX_ARTIFACT_BYTES:
                raise CandidateFailure("compile", f"the compiled program is over {MAX_ARTIFACT_BYTES >> 20} MB")
            artifacts[name] = binascii.b2a_base64(data, newline=False).decode()
    if not artifacts:
        raise CandidateFailure("compile", f"the compiler left none of {list(program.get('artifacts') or ())}")
    judge.data = {"artifacts": artifacts, "compiler_output": said[-COMPILER_MESSAGE_CHARS:],
                  "compile_s": round(time.monotonic() - started, 4)}  # fmt: skip


def _how(status: dict[str, Any], judge: Judge) -> str:
    if status.get("memory_exceeded"):
        return f"the compiler ran out of its {judge.limits['memory_mb']} MB"
    if status.get("signal"):
        return f"the compiler was ended by signal {status['signal']}"
    return f"the compiler exited with code {status.get('code')}"


def _matching(pattern: str) -> list[str]:
    names = [n for n in os.listdir(scratch.RUN_DIR) if os.path.isfile(os.path.join(scratch.RUN_DIR, n))]
    if "*" not in pattern:
        return [pattern] if pattern in names else []
    head, _, tail = pattern.partition("*")
    return [n for n in names if n.startswith(head) and n.endswith(tail) and len(n) >= len(head) + len(tail)]

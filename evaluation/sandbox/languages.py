"""The languages a solution can be written in: one entry each, in one place.

An entry says how a program in that language is built and run inside a sandbox:
the source's file name, the compile command (None for a language run from source),
the files a compile leaves that the run needs, the run command, and how its memory
is held. Adding a language is adding an entry here (with its Debian packages, which
`make test` installs), its name to tasks_app/languages.py, and its sample task.

Toolchains come from Debian's packages and are used where they are installed:
bwrap binds the host's /usr read-only (and the few /etc directories a runtime reads
its configuration from, `etc`); the Docker image installs the same packages. Every
command names its program by its real path, resolved on the host once: Debian's
/usr/bin/java is a link through /etc/alternatives, which no sandbox sees.

A toolchain's fingerprint is the SHA-256 of what its version commands print, with
those commands and the entry's compile and run commands: a compiled program is cached under (language,
fingerprint, source hash) (compile_cache.py), so an upgraded compiler never
serves a binary the old one built.

Memory: in a bwrap sandbox's memory cgroup (memory_cgroups.py) a program may hold
the task's limit plus `memory_overhead_mb` for its runtime, with no per-process memory
limit. Elsewhere (Docker, a host without cgroups) the sandbox's address-space limit
(RLIMIT_AS) holds, which breaks runtimes that reserve far more address space than
they use (the JVM, Go, Node, Mono): those (`memory` "data") run under RLIMIT_DATA
instead, which counts the private writable memory they commit, plus the overhead.
Either way the runtime's own heap cap is set to the task's limit where it has one.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field

PYTHON = "python"
# Stderr lines with which a runtime says it ran out of memory; with a failed exit
# they make the run `memory_exceeded` rather than a runtime error.
OOM_MARKERS = (
    "std::bad_alloc",
    "java.lang.OutOfMemoryError",
    "runtime: out of memory",
    "JavaScript heap out of memory",
    "failed to allocate memory",
    "Allowed memory size of",
    "not enough memory",
    "System.OutOfMemoryException",
    "memory allocation of",
)
# Ambient declarations for the Node globals a stdio program uses, compiled beside a
# TypeScript solution (Debian ships no @types/node): written here, not copied.
NODE_GLOBALS_D_TS = """declare function require(name: string): any;
declare var process: any;
declare var module: any;
declare var Buffer: any;
declare var __dirname: string;
"""


class LanguageUnavailable(RuntimeError):
    """A language's toolchain is not installed on this host (its message names the packages)."""


@dataclass(frozen=True)
class Language:
    name: str
    title: str
    source_file: str
    run: tuple[str, ...]  # argv; the first element is a program name resolved on PATH
    compile: tuple[str, ...] | None = None
    artifacts: tuple[str, ...] = ()  # what a compile leaves that the run needs (globs allowed)
    versions: tuple[tuple[str, ...], ...] = ()  # commands whose output fingerprints the toolchain
    packages: tuple[str, ...] = ()  # Debian's
    etc: tuple[str, ...] = ()  # configuration directories the runtime reads
    memory: str = "as"  # "as" (RLIMIT_AS) or "data" (RLIMIT_DATA)
    memory_overhead_mb: int = 0
    env: dict[str, str] = field(default_factory=dict)
    extra_files: dict[str, str] = field(default_factory=dict)  # written beside the source for the compile
    fences: tuple[str, ...] = ()  # Markdown fence names a completion's code block may carry
    compile_memory_mb: int = 1024

    @property
    def compiled(self) -> bool:
        return self.compile is not None


_CC = "x86_64-linux-gnu-gcc-12"  # Debian 12's gcc, named past the /etc/alternatives link `cc`

LANGUAGES: dict[str, Language] = {
    language.name: language
    for language in (
        Language(
            "c", "C (gcc, C17)", "main.c", ("./main",),
            compile=("gcc", "-std=gnu17", "-O2", "-pipe", "-s", "-o", "main", "main.c", "-lm"),
            artifacts=("main",), versions=(("gcc", "--version"),), packages=("gcc", "libc6-dev"), fences=("c",),
        ),
        Language(
            "cpp17", "C++17 (g++)", "main.cpp", ("./main",),
            compile=("g++", "-std=gnu++17", "-O2", "-pipe", "-s", "-o", "main", "main.cpp"),
            artifacts=("main",), versions=(("g++", "--version"),), packages=("g++",), fences=("cpp", "c++", "cc"),
        ),
        Language(
            "cpp20", "C++20 (g++)", "main.cpp", ("./main",),
            compile=("g++", "-std=gnu++20", "-O2", "-pipe", "-s", "-o", "main", "main.cpp"),
            artifacts=("main",), versions=(("g++", "--version"),), packages=("g++",), fences=("cpp", "c++", "cc"),
        ),
        Language(
            "java", "Java 17", "Main.java",
            ("java", "-Xmx{memory_mb}m", "-Xss16m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-XX:CICompilerCount=1", "-XX:ReservedCodeCacheSize=32m", "-XX:MaxMetaspaceSize=64m",
             "-XX:+ExitOnOutOfMemoryError", "-Xshare:auto", "-cp", ".", "Main"),
            compile=("javac", "-encoding", "UTF-8", "-J-Xmx512m", "-d", ".", "Main.java"),
            artifacts=("*.class",), versions=(("java", "-version"), ("javac", "-version")),
            packages=("openjdk-17-jdk-headless",), etc=("/etc/java-17-openjdk",), memory="data",
            memory_overhead_mb=224, fences=("java",), compile_memory_mb=2048,
        ),
        Language(
            "javascript", "JavaScript (Node)", "main.js", ("node", "--max-old-space-size={memory_mb}", "main.js"),
            versions=(("node", "--version"),), packages=("nodejs",), memory="data", memory_overhead_mb=96,
            fences=("javascript", "js", "node"),
        ),
        Language(
            "typescript", "TypeScript (tsc, Node)", "main.ts",
            ("node", "--max-old-space-size={memory_mb}", "main.js"),
            compile=("tsc", "--target", "es2020", "--module", "commonjs", "--strict", "false", "--noEmitOnError",
                     "--outDir", ".", "main.ts", "node-globals.d.ts"),
            artifacts=("main.js",), versions=(("node", "--version"), ("tsc", "--version")),
            packages=("nodejs", "node-typescript"), memory="data", memory_overhead_mb=96,
            extra_files={"node-globals.d.ts": NODE_GLOBALS_D_TS}, fences=("typescript", "ts"),
            compile_memory_mb=2048,
        ),
        Language(
            "go", "Go", "main.go", ("./main",),
            compile=("go", "build", "-ldflags=-s -w", "-o", "main", "main.go"),
            artifacts=("main",), versions=(("go", "version"),), packages=("golang-go",), memory="data",
            memory_overhead_mb=64, env={"GOCACHE": "{run_dir}/.gocache", "GOPATH": "{run_dir}/.gopath",
                                        "GO111MODULE": "off", "CGO_ENABLED": "0"},
            fences=("go", "golang"), compile_memory_mb=2048,
        ),
        Language(
            "rust", "Rust (rustc)", "main.rs", ("./main",),
            compile=("rustc", "-O", "--edition", "2021", "-C", "strip=symbols", "-C", f"linker={_CC}", "-o", "main",
                     "main.rs"),
            artifacts=("main",), versions=(("rustc", "--version"),), packages=("rustc",), fences=("rust", "rs"),
        ),
        Language(
            "ruby", "Ruby", "main.rb", ("ruby", "main.rb"), versions=(("ruby", "--version"),),
            packages=("ruby",), memory="data", memory_overhead_mb=64, fences=("ruby", "rb"),
        ),
        Language(
            "php", "PHP", "main.php", ("php", "-n", "-d", "memory_limit={memory_mb}M", "main.php"),
            versions=(("php", "--version"),), packages=("php-cli",), fences=("php",),
        ),
        Language(
            "lua", "Lua 5.4", "main.lua", ("lua5.4", "main.lua"), versions=(("lua5.4", "-v"),),
            packages=("lua5.4",), fences=("lua",),
        ),
        Language(
            "csharp", "C# (Mono)", "main.cs", ("mono", "main.exe"),
            compile=("mcs", "-optimize+", "-out:main.exe", "main.cs"),
            artifacts=("main.exe",), versions=(("mono", "--version"), ("mcs", "--version")),
            packages=("mono-mcs", "mono-runtime"), etc=("/etc/mono",), memory="data", memory_overhead_mb=64,
            fences=("csharp", "cs", "c#"), compile_memory_mb=2048,
        ),
    )
}  # fmt: skip
# What the task content accepts: Python (the harness's own language) and the entries above.
LANGUAGE_NAMES = (PYTHON, *LANGUAGES)
# Every /etc directory some runtime reads: bound read-only into every bwrap sandbox.
RUNTIME_ETC = tuple(sorted({path for entry in LANGUAGES.values() for path in entry.etc}))


def language(name: str) -> Language:
    try:
        return LANGUAGES[name]
    except KeyError:
        known = ", ".join(LANGUAGE_NAMES)
        raise LanguageUnavailable(f"no language {name!r}: the languages are {known}") from None


def _real(program: str) -> str:
    """`program` on PATH, past every link (the sandbox has no /etc/alternatives)."""
    found = shutil.which(program, path="/usr/local/bin:/usr/bin:/bin")
    if found is None:
        raise FileNotFoundError(program)
    return os.path.realpath(found)


@functools.cache
def toolchain(name: str) -> Toolchain:
    """The host's toolchain for a language: its commands with real paths, and its
    fingerprint. Raises LanguageUnavailable, naming the packages, when one is missing."""
    entry = language(name)
    commands = [c for c in (entry.compile, entry.run) if c]
    programs = {argv[0] for argv in commands if not argv[0].startswith("./")}
    programs |= {argv[0] for argv in entry.versions}
    try:
        paths = {program: _real(program) for program in sorted(programs)}
    except FileNotFoundError as exc:
        raise LanguageUnavailable(
            f"{entry.title}: {exc.args[0]!r} is not installed on this host "
            f"(Debian: apt-get install {' '.join(entry.packages)}; `make test` installs them all)"
        ) from None
    outside = [p for p in paths.values() if not p.startswith("/usr/")]
    if outside:
        raise LanguageUnavailable(f"{entry.title}: {outside[0]} is outside /usr, which is all a sandbox sees")
    digest = hashlib.sha256()
    # The commands themselves too: other flags build another program from the same source.
    digest.update(repr((entry.compile, entry.run, entry.artifacts)).encode() + b"\0")
    first_line = ""
    for argv in entry.versions:
        command = [paths[argv[0]], *argv[1:]]
        try:
            done = subprocess.run(command, capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise LanguageUnavailable(f"{entry.title}: {' '.join(command)} failed: {exc}") from None
        digest.update(" ".join(command).encode() + b"\0" + done.stdout + done.stderr + b"\0")
        if not first_line:
            said = (done.stdout or done.stderr).decode(errors="replace").strip()
            first_line = said.splitlines()[0][:200] if said else ""
    return Toolchain(entry, paths, f"sha256:{digest.hexdigest()}", first_line)


@dataclass(frozen=True)
class Toolchain:
    language: Language
    paths: dict[str, str]
    fingerprint: str
    version: str

    def argv(self, template: tuple[str, ...], *, memory_mb: int) -> list[str]:
        argv = [part.format(memory_mb=memory_mb) for part in template]
        if not argv[0].startswith("./"):
            argv[0] = self.paths[argv[0]]
        return argv

    def env(self, run_dir: str) -> dict[str, str]:
        return {key: value.format(run_dir=run_dir) for key, value in self.language.env.items()}


def available() -> dict[str, str]:
    """Each language this host can build and run, with its toolchain's first version
    line; the missing ones with why."""
    found = {}
    for name in LANGUAGES:
        try:
            found[name] = toolchain(name).version or "installed"
        except LanguageUnavailable as exc:
            found[name] = f"missing: {exc}"
    return found


def debian_packages() -> list[str]:
    """Every toolchain's Debian packages (platform/scripts/test.sh installs the missing ones)."""
    return sorted({package for entry in LANGUAGES.values() for package in entry.packages})


if __name__ == "__main__":  # `python -m evaluation.sandbox.languages packages`: for the install scripts
    import sys

    if sys.argv[1:] == ["packages"]:
        print(" ".join(debian_packages()))
    else:
        for name, state in available().items():
            print(f"{name:12} {state}")

"""Hostile programs in other languages than Python, and hostile sources for their
compilers, through `engine.run` on bwrap (the Docker image carries no toolchain
for them yet: there such a run is `sandbox_error`, never the solution's verdict).

Each program answers its one case with what it could reach, so `passed` is the
proof that it was contained: no host file, no network, no environment, nowhere to
write outside the scratch. The compilers run inside the sandbox too, under their
own limits: a source that includes a host file learns nothing from the compiler's
message, and one that never ends compiling is a compile error. Afterwards the
host is checked clean of anything the programs made."""

from __future__ import annotations

import pytest

from evaluation.sandbox import compile_cache, engine, programs
from evaluation.sandbox.pool import SandboxPool
from evaluation.sandbox.types import Limits, RunRequest, Status

from . import hostcheck
from .conftest import CANARY_NAME, CANARY_VALUE, require_backend


@pytest.fixture(scope="module")
def pool():
    require_backend("bwrap")
    warm = SandboxPool(engine.sandbox_factory("bwrap"), size=1)
    yield warm
    warm.close()


@pytest.fixture(autouse=True)
def short_compiles(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPILE_CACHE_DIR", str(tmp_path / "compile-cache"))
    monkeypatch.setattr(programs, "COMPILE_LIMITS", {**programs.COMPILE_LIMITS, "wall_s": 8.0, "cpu_s": 8.0})
    compile_cache.forget_memory()
    yield
    compile_cache.forget_memory()


def run(pool, language: str, source: str, output: str = "contained\n", backend: str = "bwrap"):
    request = RunRequest(suite_kind="stdio", solution=source, language=language,
                         tests={"visible": [], "hidden": [{"input": "", "output": output}]},
                         limits=Limits(wall_s=5, cpu_s=5, memory_mb=256))  # fmt: skip
    return engine.run(request, backend=backend, pool=pool if backend == "bwrap" else None)


READS_HOST = r"""#include <stdio.h>
int main(void) {
    FILE *f = fopen("/etc/passwd", "r"), *g = fopen("/root/.bashrc", "r");
    puts(f || g ? "leak" : "contained");
    return 0;
}
"""
WRITES_OUTSIDE = r"""#include <fstream>
#include <iostream>
int main() {
    std::ofstream a("/usr/pwned"), b("/harness/pwned");
    std::cout << (a.is_open() || b.is_open() ? "wrote" : "contained") << '\n';
}
"""
DIALS_OUT = r"""package main

import (
	"fmt"
	"net"
	"time"
)

func main() {
	c, err := net.DialTimeout("tcp", "1.1.1.1:80", time.Second)
	if err == nil {
		c.Close()
		fmt.Println("network")
		return
	}
	fmt.Println("contained")
}
"""
SPAWNS_ENV = r"""const env = require("child_process").execSync("env").toString();
console.log(env.includes("CANARY_NAME") || env.includes("CANARY_VALUE") ? "leak" : "contained");
"""
JAVA_LOOKS = r"""import java.nio.file.*;
public class Main {
  public static void main(String[] a) {
    boolean leak = Files.isReadable(Paths.get("/etc/shadow")) || Files.exists(Paths.get("/home"))
        || System.getenv("CANARY_NAME") != null;
    System.out.println(leak ? "leak" : "contained");
  }
}
"""
READS_PID1 = r"""#include <stdio.h>
#include <string.h>
int main(void) {
    static char b[65536];
    FILE *f = fopen("/proc/1/environ", "r");
    size_t n = f ? fread(b, 1, sizeof b - 1, f) : 0;
    for (size_t i = 0; i < n; i++) if (!b[i]) b[i] = ' ';
    puts(strstr(b, "CANARY_VALUE") ? "leak" : "contained");
    return 0;
}
"""


def _canaries(source: str) -> str:
    return source.replace("CANARY_NAME", CANARY_NAME).replace("CANARY_VALUE", CANARY_VALUE)


CONTAINED = [
    ("c", READS_HOST),
    ("cpp17", WRITES_OUTSIDE),
    ("go", DIALS_OUT),
    ("javascript", _canaries(SPAWNS_ENV)),
    ("java", _canaries(JAVA_LOOKS)),
    ("c", _canaries(READS_PID1)),
]


@pytest.mark.parametrize(("language", "source"), CONTAINED)
def test_a_program_reaches_no_host_file_network_or_secret(pool, language, source):
    before = hostcheck.HostSnapshot.take()
    result = run(pool, language, source)
    assert result.status == Status.PASSED, (result.status, result.message, [t.message for t in result.tests])
    assert not hostcheck.file_problems(before)


@pytest.mark.parametrize(
    ("language", "source"),
    [
        ("c", "#include <unistd.h>\nint main(void){for(;;)fork();}\n"),
        ("go", 'package main\n\nimport "os/exec"\n\nfunc main() {\n\tfor {\n'
               '\t\t_ = exec.Command("/bin/sh", "-c", "sleep 100 &").Start()\n\t}\n}\n'),
        ("cpp17", "#include <vector>\nint main(){std::vector<char*> k;for(;;){char*p=new char[1<<22];"
                  "for(int i=0;i<(1<<22);i+=4096)p[i]=1;k.push_back(p);}}\n"),
    ],
)  # fmt: skip
def test_bombs_are_contained_and_leave_nothing_behind(pool, language, source):
    before = hostcheck.HostSnapshot.take()
    result = run(pool, language, source)
    assert result.status in (Status.FAILED, Status.TIMEOUT, Status.MEMORY_EXCEEDED), (result.status, result.message)
    assert not hostcheck.file_problems(before)
    # The pool's sandbox serves the next run as if nothing happened.
    assert run(pool, "c", '#include <stdio.h>\nint main(void){puts("contained");}\n').status == Status.PASSED


@pytest.mark.parametrize(
    ("language", "source"),
    [
        ("c", '#include "/etc/passwd"\nint main(void){return 0;}\n'),
        ("cpp17", '#include "/etc/hostname"\n#include "/proc/self/environ"\nint main(){}\n'),
        ("rust", 'fn main() { let s: i32 = include_str!("/etc/passwd"); }\n'),
        ("c", '#include "/dev/random"\nint main(void){return 0;}\n'),
        ("c", '#include __FILE__\nint main(void){return 0;}\n'),
        ("cpp17", "template<int N> struct F { enum { v = F<N - 1>::v + F<N - 2>::v }; };\n"
                  "template<> struct F<1> { enum { v = 1 }; };\ntemplate<> struct F<0> { enum { v = 0 }; };\n"
                  "int main() { return F<100000>::v; }\n"),
        ("c", "static char big[1L << 40];\nint main(void){ big[0] = 1; return big[1]; }\n"),
    ],
)  # fmt: skip
def test_hostile_sources_are_compile_errors_that_leak_nothing(pool, language, source):
    result = run(pool, language, source)
    assert result.status in (Status.COMPILE_ERROR, Status.MEMORY_EXCEEDED, Status.FAILED), (
        result.status,
        result.message,
    )
    assert "root:x:0:0" not in result.message and CANARY_VALUE not in result.message
    assert result.status != Status.SANDBOX_ERROR


def test_the_docker_backend_refuses_another_language_as_its_own_fault_never_the_solutions():
    result = run(None, "c", '#include <stdio.h>\nint main(void){puts("contained");}\n', backend="docker")
    assert result.status == Status.SANDBOX_ERROR and "toolchain" in result.message

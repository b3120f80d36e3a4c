"""Hostile programs in other languages than Python, and hostile sources for their
compilers, through `engine.run` on both backends (bwrap binds the host's toolchains;
the Docker image carries the same packages).

Each program answers its one case with what it could reach, so `passed` is the
proof that it was contained: no host file, no network, no environment, nowhere to
write outside the scratch. The compilers run inside the sandbox too, under their
own limits: a source that includes a host file learns nothing from the compiler's
message, and one that never ends compiling is a compile error. Afterwards the
host is checked clean of anything the programs made."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.sandbox import compile_cache, engine, programs
from evaluation.sandbox.pool import SandboxPool
from evaluation.sandbox.types import Limits, RunRequest, Status

from . import hostcheck
from .conftest import CANARY_NAME, CANARY_VALUE, require_backend


@pytest.fixture(scope="module", params=[pytest.param("bwrap", marks=pytest.mark.bwrap),
                                        pytest.param("docker", marks=pytest.mark.docker)])  # fmt: skip
def pool(request):
    """(backend, a warm pool of one) for each backend."""
    require_backend(request.param)
    warm = SandboxPool(engine.sandbox_factory(request.param), size=1)
    yield request.param, warm
    warm.close()


@pytest.fixture(autouse=True)
def short_compiles(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPILE_CACHE_DIR", str(tmp_path / "compile-cache"))
    monkeypatch.setattr(programs, "COMPILE_LIMITS", {**programs.COMPILE_LIMITS, "wall_s": 8.0, "cpu_s": 8.0})
    compile_cache.forget_memory()
    yield
    compile_cache.forget_memory()


def run(pool, language: str, source: str, output: str = "contained\n"):
    backend, warm = pool
    request = RunRequest(suite_kind="stdio", solution=source, language=language,
                         tests={"visible": [], "hidden": [{"input": "", "output": output}]},
                         limits=Limits(wall_s=5, cpu_s=5, memory_mb=256))  # fmt: skip
    return engine.run(request, backend=backend, pool=warm)


CHECKOUT = str(Path(__file__).resolve().parents[2])
# Files only the host has: the platform's checkout, root's home, and the host's user table
# (its service users; a Docker image has an /etc/passwd of its own, without them).
READS_HOST = r"""#include <stdio.h>
#include <string.h>
int main(void) {
    FILE *f = fopen("__CHECKOUT__/manage.py", "r"), *g = fopen("/root/.bashrc", "r");
    FILE *p = fopen("/etc/passwd", "r");
    char users[65536] = "";
    if (p) users[fread(users, 1, sizeof users - 1, p)] = 0;
    int host_users = strstr(users, "postgres:") || strstr(users, "rabbitmq:") || strstr(users, "redis:");
    puts(f || g || host_users ? "leak" : "contained");
    return 0;
}
""".replace("__CHECKOUT__", CHECKOUT)
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
    boolean leak = Files.isReadable(Paths.get("/etc/shadow")) || Files.exists(Paths.get("__CHECKOUT__"))
        || Files.exists(Paths.get("/root/.bashrc")) || System.getenv("CANARY_NAME") != null;
    System.out.println(leak ? "leak" : "contained");
  }
}
""".replace("__CHECKOUT__", CHECKOUT)
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


TRACES = r"""#include <stdio.h>
#include <sys/ptrace.h>
#include <unistd.h>
int main(void) {
    /* Attach to the judge (its parent), to PID 1, and to anything else in reach. */
    int reached = 0;
    pid_t targets[] = {getppid(), 1, 2};
    for (int i = 0; i < 3; i++) {
        if (targets[i] != getpid() && ptrace(PTRACE_ATTACH, targets[i], 0, 0) == 0) reached = 1;
    }
    puts(reached ? "traced" : "contained");
    return 0;
}
"""
JAVA_EXECS = r"""import java.io.*;
public class Main {
  public static void main(String[] a) throws Exception {
    String seen = "";
    try {
      Process p = Runtime.getRuntime().exec(new String[] {"/bin/sh", "-c", "env; cat /etc/shadow; ls /root"});
      seen = new String(p.getInputStream().readAllBytes());
      p.waitFor();
    } catch (IOException e) {
      seen = "";
    }
    boolean leak = seen.contains("CANARY_VALUE") || seen.contains("root:") || seen.contains(".bashrc");
    System.out.println(leak ? "leak" : "contained");
  }
}
"""

# Native code written at run time, then loaded or executed: from the scratch (the working
# directory), /tmp and /dev/shm. Each copy must be written (else "unwritten": the test
# would prove nothing) and must not run: solution processes see all three noexec.
JAVA_LOADS_WRITTEN = r"""import java.nio.file.*;
public class Main {
  public static void main(String[] a) throws Exception {
    Path lib = Paths.get(System.getProperty("java.home"), "lib", "librmi.so");
    String verdict = "contained";
    for (String place : new String[] {System.getProperty("user.dir"), "/tmp", "/dev/shm"}) {
      Path copy = Paths.get(place, "libwritten.so");
      try {
        Files.copy(lib, copy, StandardCopyOption.REPLACE_EXISTING);
      } catch (Exception e) {
        verdict = "unwritten " + place;
        break;
      }
      try {
        System.load(copy.toString());
        verdict = "loaded " + place;
        break;
      } catch (UnsatisfiedLinkError e) {
        // noexec: the library cannot be mapped executable
      }
    }
    System.out.println(verdict);
  }
}
"""
C_EXECS_WRITTEN = r"""#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc > 1) { puts("executed"); return 0; }
    const char *places[] = {"./copy", "/tmp/copy", "/dev/shm/copy"};
    static char image[1 << 20];
    FILE *self = fopen("/proc/self/exe", "rb");
    size_t n = self ? fread(image, 1, sizeof image, self) : 0;
    for (int i = 0; i < 3; i++) {
        FILE *out = fopen(places[i], "wb");
        if (!out || !n || fwrite(image, 1, n, out) != n) { printf("unwritten %s\n", places[i]); return 0; }
        fclose(out);
        chmod(places[i], 0755);
        char *args[] = {(char *)places[i], "again", NULL};
        execv(places[i], args); /* returns only if refused */
    }
    puts("contained");
    return 0;
}
"""
# ...nor lift the flag: in a user namespace of its own, with every capability there, it
# tries to remount the scratch exec and to unmount the noexec bind, then execs a copy.
C_UNDOES_NOEXEC = r"""#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
static void put(const char *path, const char *text) {
    int fd = open(path, O_WRONLY);
    if (fd >= 0) { (void)!write(fd, text, strlen(text)); close(fd); }
}
int main(int argc, char **argv) {
    if (argc > 1) { puts("executed"); return 0; }
    char map[64];
    unsigned uid = getuid(), gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0) {
        snprintf(map, sizeof map, "%u %u 1", uid, uid);
        put("/proc/self/uid_map", map);
        put("/proc/self/setgroups", "deny");
        snprintf(map, sizeof map, "%u %u 1", gid, gid);
        put("/proc/self/gid_map", map);
        mount(NULL, "/scratch", NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV, NULL);
        umount2("/scratch", MNT_DETACH);
        mount(NULL, "/tmp", NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV, NULL);
    }
    static char image[1 << 20];
    FILE *self = fopen("/proc/self/exe", "rb");
    size_t n = self ? fread(image, 1, sizeof image, self) : 0;
    const char *places[] = {"/scratch/run/copy", "/tmp/copy"};
    for (int i = 0; i < 2; i++) {
        FILE *out = fopen(places[i], "wb");
        if (!out || !n || fwrite(image, 1, n, out) != n) { printf("unwritten %s\n", places[i]); return 0; }
        fclose(out);
        chmod(places[i], 0755);
        char *args[] = {(char *)places[i], "again", NULL};
        execv(places[i], args);
    }
    puts("contained");
    return 0;
}
"""
PYTHON_LOADS_WRITTEN = r"""import ctypes, shutil
verdict = "contained"
for place in (".", "/tmp", "/dev/shm"):
    copy = place + "/libwritten.so"
    try:
        shutil.copyfile("/usr/lib/x86_64-linux-gnu/libdl.so.2", copy)
    except OSError:
        verdict = "unwritten " + place
        break
    try:
        ctypes.CDLL(copy)
        verdict = "loaded " + place
        break
    except OSError:
        pass
print(verdict)
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
    ("c", TRACES),
    ("java", _canaries(JAVA_EXECS)),
    ("java", JAVA_LOADS_WRITTEN),
    ("c", C_EXECS_WRITTEN),
    ("c", C_UNDOES_NOEXEC),
    ("python", PYTHON_LOADS_WRITTEN),
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
    # The host's user table never shows (its service users); under bwrap no /etc/passwd at all
    # (a Docker image has one of its own, which the compiler may quote).
    assert "postgres:x:" not in result.message and "rabbitmq:x:" not in result.message
    assert CANARY_VALUE not in result.message
    if pool[0] == "bwrap":
        assert "root:x:0:0" not in result.message
    assert result.status != Status.SANDBOX_ERROR


def test_a_toolchain_missing_in_the_sandbox_is_its_fault_never_the_solutions(pool, monkeypatch):
    # The host's table names a compiler the sandbox does not hold: nothing of the
    # solution's ran, so it is sandbox_error, decided before the solution's code starts.
    from evaluation.sandbox import languages

    chain = languages.toolchain("c")
    gone = languages.Toolchain(chain.language, {**chain.paths, "gcc": "/usr/bin/no-such-gcc"}, chain.fingerprint + "x",
                               chain.version)  # fmt: skip
    monkeypatch.setattr(programs, "toolchain", lambda name: gone if name == "c" else languages.toolchain(name))
    result = run(pool, "c", '#include <stdio.h>\nint main(void){puts("contained");}\n')
    assert result.status == Status.SANDBOX_ERROR, (result.status, result.message)
    assert "no-such-gcc is missing in this sandbox" in result.message

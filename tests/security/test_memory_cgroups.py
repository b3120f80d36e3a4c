"""Memory limits from a memory cgroup per sandbox, on both backends
(evaluation/sandbox/memory_cgroups.py; a Docker sandbox's below its container's own,
evaluation/sandbox/docker_handover.py).

The limit holds a run's processes together, not each alone; it counts what they
touch, not the address space they reserve; the kernel's own counters say whether an
OOM kill was for the run's limit (memory_exceeded) or the host's (host_oom: rerun,
never the solution's failure); and the solution never holds a descriptor that could
change any of it."""

from __future__ import annotations

import os
import time

import pytest

from evaluation.sandbox import engine, memory_cgroups
from evaluation.sandbox.pool import SandboxPool
from evaluation.sandbox.types import Limits, RunRequest, Status

from .conftest import BACKENDS, require_backend

# Three processes of 100 MB each: any one fits a 256 MB limit, all three do not. The
# parent waits for them and prints the answer whatever became of them, so only the
# cgroup's counters can say the run held more than it was allowed.
TOGETHER_C = r"""#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
int main(void) {
    for (int k = 0; k < 3; k++) {
        if (fork() == 0) {
            size_t n = 100u << 20;
            volatile char *q = malloc(n);
            if (!q) _exit(3);
            for (size_t i = 0; i < n; i += 4096) q[i] = 1;
            sleep(1);
            _exit(q[4096] == 1 ? 0 : 4);
        }
    }
    while (wait(NULL) > 0) {}
    puts("contained");
}
"""
TOGETHER_PYTHON = """import os, time
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = bytearray(100 << 20)  # each under the run's 256 MB (and its own RLIMIT_AS)
        time.sleep(1)
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
print("contained")
"""
# 8 GB of address space reserved, 1 MB of it touched: an address-space limit would
# refuse the reservation (as it breaks the JVM's, Go's and rustc's); the cgroup counts
# only what is touched.
RESERVES_C = r"""#include <stdio.h>
#include <sys/mman.h>
int main(void) {
    char *p = mmap(0, 8UL << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) { puts("refused"); return 0; }
    for (long i = 0; i < (1L << 20); i += 4096) p[i] = 1;
    puts("contained");
}
"""
LISTS_FDS_C = r"""#include <stdio.h>
#include <dirent.h>
#include <stdlib.h>
int main(void) {
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int extra = 0;
    while ((e = readdir(d))) { int fd = atoi(e->d_name); if (e->d_name[0] != '.' && fd > 2 && fd != dirfd(d)) extra++; }
    printf(extra ? "holds %d more\n" : "contained\n", extra);
}
"""
LISTS_FDS_PYTHON = """import os
extra = [fd for fd in os.listdir("/proc/self/fd") if int(fd) > 2]
print("contained" if len(extra) <= 1 else f"holds {extra}")  # the listing's own descriptor
"""


@pytest.fixture(scope="module", params=[pytest.param(b, marks=getattr(pytest.mark, b)) for b in BACKENDS])
def pool(request):
    backend = request.param
    require_backend(backend)
    if backend == "bwrap" and memory_cgroups.hierarchy() is None:
        pytest.fail(f"bwrap sandboxes have no memory cgroups here: {memory_cgroups.unavailable_reason()}")
    warm = SandboxPool(engine.sandbox_factory(backend), size=1)
    warm.backend_name = backend
    yield warm
    warm.close()


def run(pool, language: str, source: str, memory_mb: int = 256):
    request = RunRequest(suite_kind="stdio", solution=source, language=language,
                         tests={"visible": [], "hidden": [{"input": "", "output": "contained\n"}]},
                         limits=Limits(wall_s=10, cpu_s=5, memory_mb=memory_mb))  # fmt: skip
    return engine.run(request, backend=pool.backend_name, pool=pool)


@pytest.mark.parametrize(("language", "source"), [("c", TOGETHER_C), ("python", TOGETHER_PYTHON)])
def test_a_runs_processes_are_held_to_its_memory_together(pool, language, source):
    result = run(pool, language, source)
    assert result.status == Status.MEMORY_EXCEEDED, (result.status, result.message)
    assert result.attempts == 1  # the run's own limit: no doubt about whose kill it was
    # Each process alone fits: the same program forking once passes.
    once = source.replace("range(3)", "range(1)").replace("k < 3", "k < 1")
    assert run(pool, language, once).status == Status.PASSED


def test_reserved_address_space_is_not_memory(pool):
    result = run(pool, "c", RESERVES_C, memory_mb=64)
    assert result.status == Status.PASSED, (result.status, result.message)


@pytest.mark.parametrize(("language", "source"), [("c", LISTS_FDS_C), ("python", LISTS_FDS_PYTHON)])
def test_solution_processes_hold_none_of_the_cgroups_descriptors(pool, language, source):
    result = run(pool, language, source)
    assert result.status == Status.PASSED, (result.status, result.message)


def test_a_sandbox_sits_in_its_own_cgroups_and_leaves_them_empty():
    require_backend("bwrap")
    from evaluation.sandbox.bwrap import BwrapSandbox

    sandbox = BwrapSandbox().start()
    cgroup = sandbox.memory_cgroup
    try:
        assert cgroup is not None
        with open(cgroup.judge_procs()) as handle:
            assert str(sandbox.process.pid) in handle.read().split()  # bwrap itself, from its first instruction
        _await_zygote(cgroup)
    finally:
        sandbox.close()
    assert cgroup.leftover_processes() == 0


@pytest.mark.docker
def test_a_container_sits_in_cgroups_below_its_own_and_they_go_with_it():
    require_backend("docker")
    from evaluation.sandbox.docker_backend import DockerSandbox

    sandbox = DockerSandbox().start()
    cgroup = sandbox.memory_cgroup
    try:
        assert cgroup is not None
        sandbox.container.reload()
        supervisor = str(sandbox.container.attrs["State"]["Pid"])
        assert sandbox.container.id in cgroup.path
        assert _procs(cgroup.judge) == [supervisor]  # moved from the container's own before it greeted
        assert _procs(cgroup.path) == []
        _await_zygote(cgroup)
    finally:
        sandbox.close()
    assert not os.path.exists(cgroup.path)  # the engine removes the container's cgroup, ours below it too


def _await_zygote(cgroup: memory_cgroups.SandboxCgroup) -> None:
    deadline = time.monotonic() + 10
    while not _procs(cgroup.run) and time.monotonic() < deadline:
        time.sleep(0.01)  # the zygote moves itself there as it starts, after the greeting
    assert _procs(cgroup.run)  # the zygote and its spare


def _procs(directory: str) -> list[str]:
    with open(os.path.join(directory, "cgroup.procs")) as handle:
        return handle.read().split()


def _set_ceiling(cgroup: memory_cgroups.SandboxCgroup, nbytes: int | str) -> str:
    """Set the ceiling over the whole sandbox, and return the one it had."""
    name = "memory.limit_in_bytes" if cgroup.version == 1 else "memory.max"
    with open(os.path.join(cgroup.path, name)) as handle:
        was = handle.read().strip()
    with open(os.path.join(cgroup.path, name), "w") as handle:
        handle.write(str(nbytes))
    return was


def _usage(cgroup: memory_cgroups.SandboxCgroup) -> int:
    name = "memory.usage_in_bytes" if cgroup.version == 1 else "memory.current"
    with open(os.path.join(cgroup.path, name)) as handle:
        return int(handle.read())


def test_an_oom_kill_below_the_runs_limit_is_the_hosts_never_the_solutions(pool):
    # The host's OOM killer, played by a ceiling over the whole sandbox (its uid's
    # cgroup, or its container's, above `judge` and `run`): the solution's 150 MB is well under its own
    # 256 MB, yet it is killed. The kill is counted in `run`, whose limit was never
    # reached: host_oom, rerun in a fresh sandbox, whose clean run is the verdict.
    with pool.lease() as sandbox:
        cgroup = sandbox.memory_cgroup
        was = _set_ceiling(cgroup, _usage(cgroup) + (48 << 20))
    source = 'block = bytearray(150 << 20)\nprint("contained")\n'
    try:
        result = run(pool, "python", source)
    finally:
        if os.path.exists(cgroup.path):  # a container goes with its cgroups once a run failed in it
            _set_ceiling(cgroup, was)
    assert result.anomaly == "host_oom", (result.status, result.anomaly, result.message)
    assert result.attempts == 2
    assert result.status == Status.PASSED, (result.status, result.message)

"""What an agent session costs, against the docker SDK's exec into a warm container.

Figures (the last line printed is one JSON object):
- step_true_over_docker_exec: the p50 of a `bash true` step through the session
  engine (the whole host path: frame to the sandbox's supervisor, fork, exec, the
  tree walk for files_changed, the observation and its hash) over the p50 of the
  docker SDK's `exec_run("true")` into a warm container of the sandbox image, the
  two taking turns. Goal <= 0.1. Null with the reason where Docker cannot run.
- fork_over_create: forking a session whose tree is 5 MB over creating one from the
  prepared environment, with no spares: the create starts a family (bwrap, an
  interpreter, the harness), the fork reads the parent's changes and is forked into
  the parent's family (sessions/family.py); both copy the tree into a tmpfs of their
  own. Goal <= 0.5.
- fork_group8_ms (p50, p99) and fork_group8_over_creates: a GRPO group, 8 forks of one
  session in one call (the holder forks them in turn, each lays its tree out on its
  own core), over 8 creates one after another; no spares.
- create_cold_ms, fork_cold_ms, create_warm_ms, fork_warm_ms: p50 and p99, the
  environment already prepared; warm: the host keeps spare sessions of it started
  (sessions/spares.py), which a create takes and a fork does not.
- step_p50_ms / step_p99_ms for `true`, for reading a 1 MB file, for a 20-test
  pytest suite.
- sessions_per_core: the most concurrent sessions, stepping `true` back to back, at
  which the p95 step latency stays under 50 ms, divided by the cores.
- leaked_after_worker_kill: processes of a worker's sessions still alive after the
  worker is killed with SIGKILL (its sandboxes die with it: --die-with-parent).
- docker: the same create, fork and `true` step figures on the Docker backend (a
  container per session, from an image of the prepared environment), and
  docker_step_over_bwrap_step; null with the reason where Docker cannot run.
- docker_environment_image_build_s: building the environment's image (the sandbox
  image and a layer holding the tree twice: sessions/docker_images.py), once per
  environment; docker_environment_layer_mb, that layer's size.

Usage: .venv/bin/python bench/sessions.py [--steps N] [--skip-docker]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation.sandbox.sessions.environments import EnvironmentCache, EnvironmentSpec  # noqa: E402
from evaluation.sandbox.sessions.host import SessionHost  # noqa: E402
from evaluation.sandbox.sessions.limits import SessionLimits  # noqa: E402
from evaluation.sandbox.sessions.session import Session  # noqa: E402

CORES = os.cpu_count() or 1
DOCKER_IMAGE = os.environ.get("SANDBOX_DOCKER_IMAGE", "taskplatform-sandbox:latest")
LIMITS = SessionLimits(max_steps=100_000, step_timeout_s=120.0, lease_s=3600.0, idle_timeout_s=3600.0)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(value: float) -> float:
    return round(value * 1000, 3)


def project_files(total_bytes: int, *, tests: int = 20) -> dict[str, bytes]:
    """A project of about `total_bytes`: modules of filler, one module under test, and a
    suite of `tests` quick tests."""
    files: dict[str, bytes] = {"pkg/__init__.py": b"", "pkg/ops.py": b"def double(x):\n    return 2 * x\n"}
    body = "".join(f"TABLE_{i} = {list(range(i % 50))!r}\n" for i in range(200)).encode()
    count = 0
    while sum(len(data) for data in files.values()) < total_bytes:
        files[f"pkg/filler/m{count:04d}.py"] = body
        count += 1
    files["pkg/filler/__init__.py"] = b""
    cases = "".join(f"def test_double_{i}():\n    assert double({i}) == {2 * i}\n\n\n" for i in range(tests))
    files["tests/test_ops.py"] = ("from pkg.ops import double\n\n\n" + cases).encode()
    files["data/blob.bin"] = bytes(range(256)) * 4096  # 1 MB to read
    return files


def timed(function: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        samples.append(time.perf_counter() - started)
    return samples


class Steps:
    def __init__(self, session: Session) -> None:
        self.session = session

    def run(self, action: dict) -> dict:
        return self.session.execute(seq=len(self.session.steps) + 1, action=action)


def docker_exec_samples(steps: int) -> tuple[list[float] | None, str]:
    try:
        import docker
    except ImportError:
        return None, "the docker SDK is not installed"
    if shutil.which("docker") is None:
        return None, "no docker client"
    try:
        client = docker.from_env()
        client.images.get(DOCKER_IMAGE)
    except Exception as exc:  # any reason Docker cannot run is reported, not raised
        return None, f"docker unavailable: {type(exc).__name__}: {exc}"[:200]
    container = client.containers.run(DOCKER_IMAGE, ["sleep", "infinity"], detach=True, network_mode="none",
                                      auto_remove=True)  # fmt: skip
    try:
        container.exec_run(["true"])
        return [timed(lambda: container.exec_run(["true"]), 1)[0] for _ in range(steps)], ""
    finally:
        container.kill()


def side_by_side(session_step: Callable[[], object], steps: int, skip_docker: bool) -> dict:
    """The session step and docker's exec_run, taking turns in rounds."""
    ours: list[float] = []
    theirs: list[float] = []
    note = "skipped (--skip-docker)" if skip_docker else ""
    rounds = 5
    for _ in range(rounds):
        ours += timed(session_step, steps // rounds)
        if not skip_docker and note == "":
            samples, note = docker_exec_samples(steps // rounds)
            if samples is not None:
                theirs += samples
    figures = {"step_true_p50_ms": ms(statistics.median(ours)), "step_true_p99_ms": ms(percentile(ours, 0.99))}
    if theirs:
        figures["docker_exec_run_p50_ms"] = ms(statistics.median(theirs))
        figures["step_true_over_docker_exec"] = round(statistics.median(ours) / statistics.median(theirs), 4)
    else:
        figures["step_true_over_docker_exec"] = None
        figures["docker_note"] = note
    return figures


def create_and_fork(backend: str, environment, runs: int) -> dict:
    """Creating a session and forking one, taking turns: cold (every sandbox started
    then: the fork against a creation from the prepared environment, like for like)
    and warm (from the host's spares, given a moment to refill between turns)."""
    figures: dict = {}
    for kind, spares, pause in (("cold", 0, 0.0), ("warm", 2, 0.2)):
        host = SessionHost(max_sessions=64, backend=backend, spares=spares)
        creates, forks = [], []
        try:
            parent = host.create(environment=environment, limits=LIMITS, verdict_spec=None)
            Steps(parent).run({"kind": "bash", "command": "echo changed >> pkg/ops.py"})
            for _ in range(runs):
                time.sleep(pause)
                started = time.perf_counter()
                made = host.create(environment=environment, limits=LIMITS, verdict_spec=None)
                creates.append(time.perf_counter() - started)
                host.close(made.id)
                time.sleep(pause)
                started = time.perf_counter()
                (child,) = host.fork(parent.id, 1)
                forks.append(time.perf_counter() - started)
                host.close(child.id)
        finally:
            host.shutdown()
        figures[f"create_{kind}_ms"] = {"p50": ms(statistics.median(creates)), "p99": ms(percentile(creates, 0.99))}
        figures[f"fork_{kind}_ms"] = {"p50": ms(statistics.median(forks)), "p99": ms(percentile(forks, 0.99))}
        if kind == "cold":
            figures["fork_over_create"] = round(statistics.median(forks) / statistics.median(creates), 4)
    figures.update(group_fork(backend, environment, max(3, runs // 4)))
    return figures


def group_fork(backend: str, environment, runs: int, size: int = 8) -> dict:
    """A GRPO group: `size` forks of one prepared session in one call, against `size`
    creates one after another, taking turns, no spares."""
    host = SessionHost(max_sessions=64, backend=backend, spares=0)
    groups, creates = [], []
    try:
        parent = host.create(environment=environment, limits=LIMITS, verdict_spec=None)
        Steps(parent).run({"kind": "bash", "command": "echo changed >> pkg/ops.py"})
        for _ in range(runs):
            started = time.perf_counter()
            children = host.fork(parent.id, size)
            groups.append(time.perf_counter() - started)
            for child in children:
                host.close(child.id)
            started = time.perf_counter()
            made = [host.create(environment=environment, limits=LIMITS, verdict_spec=None) for _ in range(size)]
            creates.append(time.perf_counter() - started)
            for session in made:
                host.close(session.id)
    finally:
        host.shutdown()
    ratio = round(statistics.median(groups) / statistics.median(creates), 4)
    return {f"fork_group{size}_ms": {"p50": ms(statistics.median(groups)), "p99": ms(percentile(groups, 0.99))},
            f"fork_group{size}_over_creates": ratio}  # fmt: skip


def step_kinds(session: Session, runs: int) -> dict:
    steps = Steps(session)
    kinds = {
        "true": {"kind": "bash", "command": "true"},
        "read_1mb": {"kind": "read_file", "path": "data/blob.bin"},
        "pytest_20": {"kind": "run_tests", "tests": ["tests/test_ops.py"]},
    }
    figures = {}
    for name, action in kinds.items():
        count = max(5, runs // 10) if name == "pytest_20" else runs
        samples = timed(lambda action=action: steps.run(action), count)
        if name == "pytest_20":
            assert "20 passed" in session.steps[-1]["stdout"], session.steps[-1]["stdout"]
        figures[name] = {"p50_ms": ms(statistics.median(samples)), "p99_ms": ms(percentile(samples, 0.99))}
    return figures


def docker_backend_figures(environment, steps: int) -> dict:
    """The environment's image built, then create, fork and a `true` step with sessions
    in containers of it; the image is removed afterwards."""
    try:
        from evaluation.sandbox.docker_backend import docker_client

        client = docker_client()
        base = client.images.get(DOCKER_IMAGE)
    except Exception as exc:  # any reason Docker cannot run is reported, not raised
        return {"docker": None, "docker_backend_note": f"{type(exc).__name__}: {exc}"[:200]}
    from evaluation.sandbox.sessions.docker_images import cache_label, environment_image, prune_environment_images

    try:
        held = environment.acquire()
        try:
            started = time.perf_counter()
            image = environment_image(client, environment, base.id)
            build_s = round(time.perf_counter() - started, 3)
        finally:
            os.close(held)
        figures = {"docker": docker_session_figures(environment, steps),
                   "docker_environment_image_build_s": build_s,
                   "docker_environment_layer_mb": round((client.images.get(image).attrs["Size"]
                                                          - base.attrs["Size"]) / 1e6, 1)}  # fmt: skip
    finally:
        prune_environment_images(client, set(), cache=cache_label(environment.root.parent))
    return figures


def docker_session_figures(environment, steps: int) -> dict:
    figures = create_and_fork("docker", environment, max(5, steps // 20))
    host = SessionHost(max_sessions=64, backend="docker")
    try:
        session = host.create(environment=environment, limits=LIMITS, verdict_spec=None)
        samples = timed(lambda: Steps(session).run({"kind": "bash", "command": "true"}), steps)
    finally:
        host.shutdown()
    figures["step_true_p50_ms"] = ms(statistics.median(samples))
    figures["step_true_p99_ms"] = ms(percentile(samples, 0.99))
    return figures


def p95_with(host: SessionHost, environment, concurrency: int, seconds: float) -> float:
    sessions = [host.create(environment=environment, limits=LIMITS, verdict_spec=None) for _ in range(concurrency)]
    latencies: list[float] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def loop(session: Session) -> None:
        steps = Steps(session)
        while time.monotonic() < stop_at:
            started = time.perf_counter()
            steps.run({"kind": "bash", "command": "true"})
            with lock:
                latencies.append(time.perf_counter() - started)

    threads = [threading.Thread(target=loop, args=(session,)) for session in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for session in sessions:
        host.close(session.id)
    return percentile(latencies, 0.95)


def sessions_per_core(host: SessionHost, environment, seconds: float) -> dict:
    held, tried = 0, {}
    concurrency = CORES
    while concurrency <= 64 * CORES:
        p95 = p95_with(host, environment, concurrency, seconds)
        tried[concurrency] = ms(p95)
        if p95 >= 0.05:
            break
        held = concurrency
        concurrency *= 2
    return {"sessions_per_core": round(held / CORES, 2), "p95_ms_by_concurrency": tried}


WORKER = """
import sys, time
sys.path.insert(0, {root!r})
from evaluation.sandbox.sessions.environments import EnvironmentCache, EnvironmentSpec
from evaluation.sandbox.sessions.host import SessionHost
from evaluation.sandbox.sessions.limits import SessionLimits
environment = EnvironmentCache({cache!r}).get(EnvironmentSpec(files={{"a.py": b"a = 1\\n"}}))
host = SessionHost()
sessions = [host.create(environment=environment, limits=SessionLimits(), verdict_spec=None) for _ in range(4)]
for session in sessions:
    session.execute(seq=1, action={{"kind": "bash", "command": "sleep 300 & echo started"}})
print(" ".join(str(session.sandbox.process.pid) for session in sessions), flush=True)
time.sleep(300)
"""


def leaked_after_worker_kill(cache: Path) -> dict:
    worker = subprocess.Popen([sys.executable, "-c", WORKER.format(root=str(ROOT), cache=str(cache))],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    pids = [int(pid) for pid in worker.stdout.readline().split()]
    descendants = set(pids)
    for pid in pids:
        descendants |= _descendants(pid)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    deadline = time.monotonic() + 5
    alive = descendants
    while time.monotonic() < deadline:
        alive = {pid for pid in descendants if _alive(pid)}
        if not alive:
            break
        time.sleep(0.05)
    return {"leaked_after_worker_kill": len(alive), "worker_session_processes": len(descendants)}


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found.add(child)
            stack.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--skip-docker", action="store_true")
    parser.add_argument("--load-seconds", type=float, default=3.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-sessions-", dir="/var/tmp"))
    os.chmod(root, 0o755)  # noqa: S103 - sandbox uids reach the environments through it
    host = SessionHost(max_sessions=1024)
    try:
        cache = EnvironmentCache(root)
        # A file of this run's own: the environment's image is built here, not found in
        # the engine's build cache from an earlier run.
        files = {**project_files(5 * 1024 * 1024), "run.txt": os.urandom(8).hex().encode()}
        started = time.perf_counter()
        environment = cache.get(EnvironmentSpec(files=files))
        figures: dict = {"environment_mb": round(environment.meta()["bytes"] / 1e6, 2),
                         "prepare_s": round(time.perf_counter() - started, 3), "cores": CORES}  # fmt: skip
        session = host.create(environment=environment, limits=LIMITS, verdict_spec=None)
        steps = Steps(session)
        figures.update(side_by_side(lambda: steps.run({"kind": "bash", "command": "true"}), args.steps,
                                    args.skip_docker))  # fmt: skip
        figures.update(create_and_fork("bwrap", environment, max(10, args.steps // 10)))
        figures["step_ms"] = step_kinds(session, args.steps)
        host.close(session.id)
        figures.update(sessions_per_core(host, environment, args.load_seconds))
        figures.update(leaked_after_worker_kill(root))
        if not args.skip_docker:
            figures.update(docker_backend_figures(environment, args.steps))
            if figures.get("docker"):
                figures["docker_step_over_bwrap_step"] = round(
                    figures["docker"]["step_true_p50_ms"] / figures["step_true_p50_ms"], 3
                )
    finally:
        host.shutdown()
        for dirpath, _dirnames, _filenames in os.walk(root):
            os.chmod(dirpath, 0o700)
        shutil.rmtree(root, ignore_errors=True)
    for name, value in figures.items():
        print(f"{name}: {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

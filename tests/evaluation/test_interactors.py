"""Interactive tasks in real sandboxes: the solution and the task's interactor talk
through pipes, each in a fresh sandbox of its own; the interactor's exit is the
verdict. A wrong or malformed dialogue is the solution's failure, a deadlock its
timeout, a broken interactor the task's (`checker_error`), and the solution can
reach neither the interactor nor the case's input."""

from __future__ import annotations

import gc
import os
import tempfile
import time

import pytest

from evaluation.sandbox import engine, interactors
from evaluation.sandbox.templates import shelf
from evaluation.sandbox.types import Limits, RunRequest, RunResult, Status
from evaluation.sandbox.types import TestOutcome as Outcome
from tasks_app.content import VersionContent
from tasks_app.errors import ValidationFailed
from tests.factories import content_data

from .conftest import BACKENDS, needs_docker
from .interactor_samples import (
    BINARY_SEARCH_CPP,
    BINARY_SEARCH_PYTHON,
    COUNT_UP_PYTHON,
    GUESS_C,
    GUESS_CASES,
    GUESS_PYTHON,
    MALFORMED_PYTHON,
    SNOOPING_PYTHON,
    UNFLUSHED_PYTHON,
)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(autouse=True)
def own_compile_cache(private_compile_cache):
    """Every test here builds in a compile cache of its own (conftest.py)."""


def interactive(backend: str, solution: str, *, interactor: str = GUESS_PYTHON, interactor_language: str = "python",
                language: str = "python", wall_s: float = 5.0, memory_mb: int = 256,
                cases: list | None = None) -> RunResult:  # fmt: skip
    cases = GUESS_CASES if cases is None else cases
    tests = {"visible": cases[:1], "hidden": cases[1:],
             "comparator": {"mode": "interactor", "language": interactor_language, "source": interactor}}  # fmt: skip
    request = RunRequest(suite_kind="stdio", solution=solution, tests=tests, language=language,
                         limits=Limits(wall_s=wall_s, cpu_s=wall_s, memory_mb=memory_mb))  # fmt: skip
    return engine.run(request, backend=backend, warm=False)


def messages(result: RunResult) -> dict[str, str]:
    return {t.name: t.message for t in result.tests if t.outcome != "passed"}


def test_a_right_dialogue_passes_in_python_and_cpp_with_python_and_c_interactors(backend):
    for solution, language in ((BINARY_SEARCH_PYTHON, "python"), (BINARY_SEARCH_CPP, "cpp17")):
        for interactor, interactor_language in ((GUESS_PYTHON, "python"), (GUESS_C, "c")):
            result = interactive(backend, solution, language=language, interactor=interactor,
                                 interactor_language=interactor_language)  # fmt: skip
            assert result.status == Status.PASSED, (language, interactor_language, result.message, messages(result))
            assert sorted(t.name for t in result.tests) == ["hidden[0]", "hidden[1]", "hidden[2]", "visible[0]"]
            assert result.data["interactor"]["status"] == "passed" and result.data["interactor"]["request_digest"]
            assert result.request_digest


def test_a_wrong_dialogue_fails_on_the_interactors_word_where_it_goes_wrong(backend):
    result = interactive(backend, COUNT_UP_PYTHON)
    assert result.status == Status.FAILED
    failed = messages(result)
    # Counting up is right for 3 of 10 and 1 of a million; not for 999,999 of a million.
    assert set(failed) == {"hidden[0]"}, failed
    assert failed["hidden[0]"].startswith("wrong answer: more than 20 questions"), failed


def test_a_malformed_line_is_a_presentation_error_and_a_crash_a_failure(backend):
    malformed = interactive(backend, MALFORMED_PYTHON)
    assert malformed.status == Status.PRESENTATION_ERROR, (malformed.message, messages(malformed))
    assert "malformed line" in malformed.message
    crashed = interactive(backend, "import sys\nsys.exit(4)\n")
    assert crashed.status == Status.FAILED
    assert all("exit code 4" in m for m in messages(crashed).values()), messages(crashed)


def test_a_deadlock_is_the_solutions_timeout_and_a_memory_bomb_its_memory(backend):
    started = interactors.CASE_OVERHEAD_S  # the run ends on the solution's wall time, not the interactor's
    result = interactive(backend, UNFLUSHED_PYTHON, wall_s=1.0)
    assert result.status == Status.TIMEOUT, (result.status, result.message, messages(result))
    assert result.wall_s < 1.0 + 10 * started
    bomb = interactive(
        backend, "input()\nblocks = []\nwhile True:\n    blocks.append(bytearray(64 << 20))\n", memory_mb=128
    )
    assert bomb.status == Status.MEMORY_EXCEEDED, (bomb.status, bomb.message)


def test_a_broken_interactor_is_the_tasks_fault_never_the_solutions(backend):
    cases = GUESS_CASES[:2]
    own_failure = interactive(backend, BINARY_SEARCH_PYTHON, interactor="import sys\nsys.exit(3)\n", cases=cases)
    assert own_failure.status == Status.CHECKER_ERROR, own_failure.message
    assert "interactor failed" in own_failure.message and "exit code 3" in own_failure.message
    raises = "print(10, flush=True)\ninput()\nraise KeyError('x')\n"
    crash = interactive(backend, BINARY_SEARCH_PYTHON, interactor=raises, cases=cases)
    assert crash.status == Status.CHECKER_ERROR and "crashed" in crash.message, crash.message
    does_not_compile = interactive(backend, BINARY_SEARCH_PYTHON, interactor="int main( {", interactor_language="c",
                                   cases=cases)  # fmt: skip
    assert does_not_compile.status == Status.CHECKER_ERROR
    assert "interactor does not compile" in does_not_compile.message
    # One that spins while the solution waits for it runs out of its own time: also the task's.
    spinning = "while True:\n    pass\n"
    slow = interactive(backend, BINARY_SEARCH_PYTHON, interactor=spinning, cases=cases[:1], wall_s=30.0)
    assert slow.status == Status.CHECKER_ERROR and "CPU time" in slow.message, slow.message


def test_an_interactor_failing_after_the_solution_left_is_the_solutions_failure_not_a_null_reward(backend):
    cases = GUESS_CASES[:1]
    # Leaves at once: an interactor that crashes on the end of its input then fails.
    left = interactive(backend, "import os\nos._exit(0)\n", cases=cases, interactor="print(1, flush=True)\ninput()\n")
    assert left.status == Status.FAILED, (left.status, left.message, messages(left))
    assert "ended (with exit code 0) before the dialogue did" in messages(left)["visible[0]"], messages(left)
    # Leaves a process holding its end of the pipe: the interactor waits on it until its time is up.
    holder = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\nos._exit(0)\n"
    held = interactive(backend, holder, cases=cases, interactor="import sys\nprint(1, flush=True)\nsys.stdin.read()\n"
                       "sys.exit(1)\n")  # fmt: skip
    assert held.status == Status.FAILED, (held.status, held.message, messages(held))


def test_the_solution_cannot_read_the_case_or_reach_the_interactor(backend):
    result = interactive(backend, SNOOPING_PYTHON)
    assert result.status == Status.FAILED, (result.status, messages(result))
    assert all("wrong answer" in m for m in messages(result).values()), messages(result)
    # Nor kill it: every process a solution sees is its own run's.
    killer = (
        "import os, signal\nfor pid in os.listdir('/proc'):\n    if pid.isdigit() and int(pid) > 1:\n"
        "        try:\n            os.kill(int(pid), signal.SIGKILL)\n        except OSError:\n            pass\n"
    )
    killed = interactive(backend, killer + BINARY_SEARCH_PYTHON)
    assert killed.status in (Status.FAILED, Status.TIMEOUT), (killed.status, killed.message)


def test_an_interactive_run_leaves_no_sandbox_and_no_descriptor_behind(backend):
    interactive(backend, BINARY_SEARCH_PYTHON, cases=GUESS_CASES[:1])  # templates and threads warmed
    gc.collect()
    before = len(os.listdir("/proc/self/fd"))
    containers = _our_containers() if backend == "docker" else 0
    for _ in range(3):
        assert interactive(backend, BINARY_SEARCH_PYTHON, cases=GUESS_CASES[:1]).status == Status.PASSED
    time.sleep(0.5 if backend == "bwrap" else 3.0)  # a cold sandbox is closed in the background after its verdict
    # A Docker client's pooled connections are closed when the client is collected (it
    # sits in reference cycles): unreachable, so not a leak, but counted until then.
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= before + 2
    if backend == "docker":
        assert _our_containers() <= containers
        assert not [name for name in os.listdir(tempfile.gettempdir()) if name.startswith("sandbox-peer-")]
        return
    # Every template is back on the shelf with no sandbox of its own left running.
    for template in shelf.idle_templates():
        with open(f"/proc/{template.pid}/task/{template.pid}/children") as handle:
            bwrap_children = handle.read().split()
        leftovers = []
        for pid in bwrap_children:
            with open(f"/proc/{pid}/task/{pid}/children") as handle:
                leftovers += handle.read().split()
        assert len(leftovers) <= 1, leftovers  # the template's own process under bwrap


def _our_containers() -> int:
    from evaluation.sandbox.docker_backend import docker_client
    from evaluation.sandbox.docker_owners import LABEL, owner_id

    return len(docker_client().api.containers(all=True, filters={"label": f"{LABEL}.owner={owner_id()}"}))


@needs_docker
def test_on_docker_the_peer_is_handed_over_before_any_solution_process_exists():
    # The handover socket and its directory are gone once the supervisor holds its peer:
    # the solution finds nothing at /handover to connect to.
    empty = "import os, sys\nif os.listdir('/handover'):\n    sys.exit(9)\n"
    result = interactive("docker", empty + BINARY_SEARCH_PYTHON, cases=GUESS_CASES[:1])
    assert result.status == Status.PASSED, (result.status, result.message, messages(result))


@needs_docker
def test_the_docker_handover_answers_only_the_containers_uid():
    import socket

    from evaluation.sandbox.docker_handover import NAME, StartHandover
    from evaluation.sandbox.errors import SandboxFailure

    uid = 61_234  # an unprivileged uid as a container's: this test runs as root to become it
    read_end, write_end = os.pipe()
    channel, silent = socket.socketpair()
    handover = StartHandover(write_end, memory=False)
    path = os.path.join(handover.directory, NAME)

    def connect_as(as_uid: int) -> int:
        """Connect from a child as `as_uid`, and exit 0 if a descriptor came, 1 if none."""
        pid = os.fork()
        if pid == 0:
            try:
                os.setgid(as_uid)
                os.setuid(as_uid)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                    connection.connect(path)
                    _data, fds, _flags, _addr = socket.recv_fds(connection, 4096, 4)
                if fds:
                    os.write(fds[-1], b"from the peer")
                os._exit(0 if fds else 1)
            except BaseException:
                os._exit(2)
        return pid

    try:
        # Root, not the container's uid, connects first (the backlog is first come, first
        # accepted): dropped unanswered.
        stranger = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stranger.connect(path)
        container = connect_as(uid)
        assert handover.hand_over(uid, time.monotonic() + 10, channel) is None  # no cgroups asked for
        assert socket.recv_fds(stranger, 4096, 4)[:2] == (b"", [])
        stranger.close()
        assert os.waitpid(container, 0)[1] >> 8 == 0
        os.close(write_end)
        assert os.read(read_end, 100) == b"from the peer"
        # A supervisor that speaks (or dies) before it connects fails the start at once.
        silent.send(b"x")
        started = time.monotonic()
        with pytest.raises(SandboxFailure, match="before it took its descriptors"):
            handover.hand_over(uid, time.monotonic() + 10, channel)
        assert time.monotonic() - started < 1
    finally:
        handover.close()
        channel.close()
        silent.close()
        os.close(read_end)
    assert not os.path.exists(handover.directory)


def test_folding_keeps_the_solutions_own_limits_and_the_interactors_word():
    def result(status, *tests, data=None):
        return RunResult(status=status, tests=[Outcome(name=n, outcome=o, message=m) for n, o, m in tests],
                         data=data)  # fmt: skip

    verdicts = {"visible[0]": {"verdict": "ok", "message": ""}, "hidden[0]": {"verdict": "wrong_answer",
                                                                             "message": "off by one"}}  # fmt: skip
    theirs = result(Status.PASSED, data={"verdicts": verdicts})
    # A solution killed by SIGPIPE after the interactor gave up: a wrong answer in the interactor's words.
    ours = result(Status.FAILED, ("visible[0]", "unchecked", ""), ("hidden[0]", "failed", "signal 13"))
    folded = interactors.fold(ours, theirs)
    assert folded.status == Status.FAILED
    assert folded.tests[1].message == "wrong answer: off by one (signal 13)"
    # A timeout stands, whatever the interactor said of the cases before it.
    timed_out = interactors.fold(result(Status.TIMEOUT, ("visible[0]", "unchecked", "")), theirs)
    assert timed_out.status == Status.TIMEOUT
    # A case no verdict came for is never a pass.
    unjudged = interactors.fold(result(Status.FAILED, ("hidden[1]", "unchecked", "")), theirs)
    assert unjudged.status == Status.FAILED and unjudged.tests[0].message == "the interactor left no verdict"
    # The interactor's sandbox failing is nobody's answer.
    lost = interactors.fold(ours, result(Status.SANDBOX_ERROR))
    assert lost.status == Status.SANDBOX_ERROR and "interactor's sandbox" in lost.message


@pytest.mark.parametrize(
    ("comparator", "path", "says"),
    [
        ({"mode": "interactor", "language": "python"}, "comparator.source", "interactor needs its source"),
        ({"mode": "interactor", "language": "cobol", "source": "x"}, "comparator.language", "Unknown interactor"),
        (
            {"mode": "interactor", "language": "python", "source": "x", "abs_tol": 1},
            "comparator.abs_tol",
            "decides for itself",
        ),
        ({"mode": "lines", "source": "x"}, "comparator.source", "interactor"),
    ],
)
def test_a_bad_interactor_is_refused_where_it_is_wrong(comparator, path, says):
    data = content_data(suite_kind="stdio", entry_point="", comparator=comparator,
                        visible_tests=[{"input": "1 1\n", "output": "1\n"}], hidden_tests=[])  # fmt: skip
    with pytest.raises(ValidationFailed) as raised:
        VersionContent.parse(data)
    errors = raised.value.details
    assert path in errors and says in " ".join(errors[path]), errors

"""The session engine on bubblewrap: environments, steps, limits, forks, the verdict."""

from __future__ import annotations

import subprocess
import time

import pytest

from evaluation.sandbox.sessions.environments import (
    EnvironmentCache,
    EnvironmentSpec,
    PreparationFailed,
)
from evaluation.sandbox.sessions.host import HostFull, SessionHost
from evaluation.sandbox.sessions.limits import LimitsInvalid, SessionLimits, limits_from
from evaluation.sandbox.sessions.session import (
    ActionInvalid,
    LimitReached,
    SeqConflict,
    StateConflict,
    observation_hash,
)
from tests.sessions_world import FILES, FIX_NEW, FIX_OLD, LIMITS, SPEC, Stepper

pytestmark = pytest.mark.bwrap


# -- prepared environments ----------------------------------------------------------------------


def test_environment_holds_one_commit_and_no_history(environment):
    tree = environment.tree
    log = subprocess.run(["git", "log", "--all", "--format=%s"], cwd=tree, capture_output=True, text=True, check=True)
    assert log.stdout.split() == ["base"]
    assert not (tree / ".git" / "logs").exists()
    assert not (tree / ".git" / "hooks").exists()
    refs = subprocess.run(["git", "for-each-ref"], cwd=tree, capture_output=True, text=True, check=True)
    assert len(refs.stdout.splitlines()) == 1


def test_environment_digest_covers_files_and_setup():
    base = EnvironmentSpec(files=FILES)
    assert base.digest() == EnvironmentSpec(files=dict(FILES)).digest()
    assert base.digest() != EnvironmentSpec(files={**FILES, "README.md": b"# changed\n"}).digest()
    assert base.digest() != EnvironmentSpec(files=FILES, setup_commands=("true",)).digest()
    executable = {**FILES, "README.md": (FILES["README.md"], True)}
    assert base.digest() != EnvironmentSpec(files=executable).digest()


def test_setup_runs_once_without_network_and_failures_carry_the_log(cache_root):
    cache = EnvironmentCache(cache_root)
    spec = EnvironmentSpec(files=FILES, setup_commands=("echo built > built.txt", "mkdir -p build && touch build/x"))
    environment = cache.get(spec)
    assert (environment.tree / "built.txt").read_text() == "built\n"
    assert cache.get(spec).root == environment.root  # cached: built once
    offline = "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=2)\""
    with pytest.raises(PreparationFailed) as failure:
        cache.get(EnvironmentSpec(files=FILES, setup_commands=(offline,)))
    assert "unreachable" in failure.value.log
    assert not any(path.name.startswith(".") and path.is_dir() for path in cache_root.iterdir())  # no staging left


@pytest.mark.parametrize("bad", ["/etc/passwd", "../up.py", "a//b.py", ".git/config", "a/./b.py"])
def test_environment_refuses_paths_outside_the_tree(cache_root, bad):
    with pytest.raises(ValueError, match=r"not a relative path|\.git"):
        EnvironmentCache(cache_root).get(EnvironmentSpec(files={bad: b"x"}))


def test_eviction_skips_environments_in_use(cache_root):
    cache = EnvironmentCache(cache_root, max_bytes=1)
    first = cache.get(EnvironmentSpec(files={"a.py": b"a = 1\n"}))
    held = first.acquire()
    try:
        cache.get(EnvironmentSpec(files={"b.py": b"b = 2\n"}))
        assert first.tree.exists()  # in use: kept though the cache is over its size
    finally:
        import os

        os.close(held)
    cache.get(EnvironmentSpec(files={"c.py": b"c = 3\n"}))
    assert not first.root.exists()


# -- steps ------------------------------------------------------------------------------------------


def test_first_observation_lists_the_tree_without_git(session):
    listing = {entry["path"] for entry in session.first_observation["listing"]}
    assert listing == set(FILES)
    assert session.first_observation["cwd"] == "/repo"
    assert session.first_observation["statement"] == "Fix median."


def test_bash_step_reports_output_exit_and_resources(step):
    observation = step.bash("echo out; echo err >&2; exit 3")
    assert observation["stdout"] == "out\n" and observation["stderr"] == "err\n"
    assert observation["exit_code"] == 3 and observation["timed_out"] is False
    assert observation["elapsed_s"] > 0 and observation["cpu_s"] >= 0 and observation["peak_memory_kb"] > 0


def test_long_output_is_cut_from_the_middle_with_its_full_count(step):
    observation = step.bash("seq 1 100000")
    total = len("".join(f"{i}\n" for i in range(1, 100001)))
    assert observation["stdout_bytes"] == total
    assert observation["stdout"].startswith("1\n2\n3\n") and observation["stdout"].endswith("99999\n100000\n")
    assert "bytes cut from the middle" in observation["stdout"]
    assert len(observation["stdout"]) < LIMITS.step_output_bytes + 200


def test_step_timeout_kills_the_step(step):
    started = time.monotonic()
    observation = step.bash("sleep 30", timeout_s=1)
    assert observation["timed_out"] is True and observation["exit_code"] is None
    assert time.monotonic() - started < 5


def test_a_background_process_does_not_outlive_its_step(step):
    observation = step.bash("(sleep 1; echo late > late.txt) & setsid sh -c 'sleep 1; touch later.txt' & echo go")
    assert observation["stdout"] == "go\n" and observation["elapsed_s"] < 1
    time.sleep(1.5)
    after = step.bash("ls; ps -e --no-headers | wc -l")
    assert "late.txt" not in after["stdout"] and "later.txt" not in after["stdout"]
    assert after["files_changed"] == []


def test_files_changed_names_each_path_with_its_hash(step):
    import hashlib

    observation = step.bash("printf 'x' > new.txt; rm README.md; echo more >> stats/core.py")
    changed = {entry["path"]: entry for entry in observation["files_changed"]}
    assert changed["new.txt"] == {"path": "new.txt", "operation": "added", "sha256": hashlib.sha256(b"x").hexdigest()}
    assert changed["README.md"]["operation"] == "deleted"
    assert changed["stats/core.py"]["operation"] == "modified"


def test_file_actions(step):
    assert step("write_file", path="notes/plan.txt", content="one\ntwo\n")["exit_code"] == 0
    assert step("read_file", path="notes/plan.txt")["stdout"] == "one\ntwo\n"
    assert step("edit", path="notes/plan.txt", old="two", new="three")["exit_code"] == 0
    assert step("read_file", path="/repo/notes/plan.txt")["stdout"] == "one\nthree\n"
    twice = step("write_file", path="dup.txt", content="a a\n") and step("edit", path="dup.txt", old="a", new="b")
    assert twice["exit_code"] == 2 and "matched 2 times" in twice["stderr"]
    escape = step("read_file", path="../../etc/passwd")
    assert escape["exit_code"] == 2 and "'..'" in escape["stderr"]
    step.bash("ln -s /proc/self/mem mem")
    assert "outside the repository" in step("write_file", path="mem", content="x")["stderr"]
    assert step("read_file", path="missing.txt")["exit_code"] == 2


def test_run_tests_runs_the_visible_tests(step):
    observation = step("run_tests")
    assert observation["exit_code"] == 0 and "2 passed" in observation["stdout"]
    assert step("run_tests", tests=["tests/test_core.py::test_mean"])["stdout"].count("passed") == 1


def test_actions_are_validated_before_they_run(session):
    for action, message in [
        ({"kind": "rm"}, "action.kind"),
        ({"kind": "bash"}, "action.command"),
        ({"kind": "edit", "path": "a", "old": "x"}, "action.new"),
        ("ls", "expected an object"),
    ]:
        with pytest.raises(ActionInvalid, match=message):
            session.execute(seq=1, action=action)
    with pytest.raises(ActionInvalid, match="timeout_s"):
        session.execute(seq=1, action={"kind": "bash", "command": "true"}, timeout_s=-1)
    assert session.steps == []


def test_the_same_seq_answers_the_stored_step_and_runs_nothing(session):
    first = session.execute(seq=1, action={"kind": "bash", "command": "echo $RANDOM >> counter.txt; cat counter.txt"})
    again = session.execute(seq=1, action={"kind": "bash", "command": "echo ignored"})
    assert again == first
    with pytest.raises(SeqConflict, match="next step is 2"):
        session.execute(seq=3, action={"kind": "bash", "command": "true"})
    second = session.execute(seq=2, action={"kind": "bash", "command": "wc -l < counter.txt"})
    assert second["stdout"].strip() == "1"


def test_observation_hashes_chain(step, session):
    for command in ("true", "echo a", "echo b"):
        step.bash(command)
    previous = session.chain_start
    for observation in session.steps:
        assert observation["prev_hash"] == previous
        assert observation["obs_hash"] == observation_hash(previous, observation)
        previous = observation["obs_hash"]


def test_step_limit_and_state_claims(host, environment):
    session = host.create(environment=environment, limits=SessionLimits(max_steps=2), verdict_spec=SPEC)
    stepper = Stepper(session)
    stepper.bash("true")
    stepper.bash("true")
    with pytest.raises(LimitReached, match="2 steps"):
        stepper.bash("true")
    session.close()
    with pytest.raises(StateConflict, match="closed"):
        stepper.bash("true")


def test_limits_are_checked_field_by_field():
    assert limits_from({"step_timeout_s": 5, "max_steps": 10}).max_steps == 10
    with pytest.raises(LimitsInvalid) as invalid:
        limits_from({"step_timeout_s": -1, "max_steps": 2.5, "nope": 1, "lease_s": "x"})
    message = str(invalid.value)
    for field in ("step_timeout_s", "max_steps", "nope", "lease_s"):
        assert f"limits.{field}" in message


# -- forks, the quota, the reaper -----------------------------------------------------------------------


def test_fork_copies_the_state_and_then_each_goes_its_own_way(host, session, step):
    step("edit", path="stats/core.py", old=FIX_OLD, new=FIX_NEW)
    step.bash("echo scratch > scratch.txt; rm README.md")
    children = host.fork(session.id, 3)
    assert len(children) == 3 and all(child.parent_id == session.id for child in children)
    assert all(child.chain_start == session.last_hash for child in children)
    for index, child in enumerate(children):
        stepper = Stepper(child)
        listing = stepper.bash("cat scratch.txt; ls")["stdout"]
        assert listing.startswith("scratch\n") and "README.md" not in listing
        stepper.bash(f"echo {index} > mine.txt")
    assert [Stepper(child).bash("cat mine.txt")["stdout"] for child in children] == ["0\n", "1\n", "2\n"]
    assert "mine.txt" not in step.bash("ls")["stdout"]


def test_quota_counts_forks_and_refuses_with_retry_after(environment):
    host = SessionHost(max_sessions=2)
    try:
        first = host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
        with pytest.raises(HostFull) as full:
            host.fork(first.id, 2)
        assert full.value.retry_after_s > 0
        host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
        with pytest.raises(HostFull):
            host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
        host.close(first.id)
        host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)  # room again
    finally:
        host.shutdown()


def test_reaper_closes_expired_and_idle_sessions(host, environment):
    leased = host.create(environment=environment, limits=SessionLimits(lease_s=1), verdict_spec=SPEC)
    idle = host.create(environment=environment, limits=SessionLimits(idle_timeout_s=1), verdict_spec=SPEC)
    now = time.time() + 2
    assert host.reap(now) == {"expired": 1, "idle": 1, "forgotten": 0}
    assert leased.state == "expired" and idle.state == "expired" and leased.sandbox is None
    assert host.stats()["counters"]["reaped_expired"] == 1


# -- the verdict --------------------------------------------------------------------------------------------


def test_a_correct_fix_earns_the_reward(session, step):
    step("edit", path="stats/core.py", old=FIX_OLD, new=FIX_NEW)
    verdict = session.submit()
    assert verdict.reward == 1.0 and verdict.status == "passed", verdict.log
    assert set(verdict.outcomes) == {*SPEC.fail_to_pass, *SPEC.pass_to_pass}
    assert session.state == "done" and session.sandbox is None


def test_the_empty_patch_fails(session):
    verdict = session.submit()
    assert verdict.reward == 0.0
    assert verdict.outcomes["tests/test_hidden.py::test_median_even"]["outcome"] == "failed"


def test_hidden_tests_are_nowhere_in_the_episode(step):
    # Every place a sandbox can write or the host could have put files; /usr is the host's own.
    search = "grep -rl test_median_even /repo /base /tmp /harness /dev /run /var /etc /home /root 2>/dev/null"
    names = "find / -path /proc -prune -o -name 'test_hidden*' -print 2>/dev/null"
    found = step.bash(f"{search}; {names}; echo done", timeout_s=60)
    assert found["stdout"] == "done\n"


def test_submit_twice_is_refused(session):
    session.submit()
    with pytest.raises(StateConflict):
        session.submit()


def test_a_change_hidden_behind_an_old_mtime_still_forks(host, session, step):
    # Same size, same mtime as the base: only the ctime (which no call can set) tells.
    step.bash("printf 'X' | dd of=README.md bs=1 count=1 conv=notrunc 2>/dev/null; touch -r /base/README.md README.md")
    (child,) = host.fork(session.id, 1)
    assert Stepper(child).bash("cat README.md")["stdout"] == "X stats\n"


def test_spares_are_taken_untouched_and_replaced(environment):
    host = SessionHost(max_sessions=4, spares=1)
    try:
        first = host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)  # a miss: none made yet
        deadline = time.monotonic() + 20
        while host.spares.stats()["ready"] < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        Stepper(first).bash("echo mine > mine.txt")
        second = host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
        assert host.spares.stats()["taken"] == 1 and host.spares.stats()["missed"] == 1
        assert {entry["path"] for entry in second.first_observation["listing"]} == set(FILES)
        assert "mine.txt" not in Stepper(second).bash("ls")["stdout"]
        assert second.sandbox not in [s for queue in host.spares.spares.values() for s in queue]
    finally:
        host.shutdown()
    assert host.spares.stats()["ready"] == 0  # closed with the host

"""The same sessions on the Docker backend: a container per session, from an image per
prepared environment, the same supervisor, the same verdict rules; a hostile episode
earns nothing there either.

Tests that build images use environments of their own (a file with a fresh token), so
their tags are theirs alone, and prune only images labelled with their own cache: other
checkouts may run these tests on the same engine at the same time."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import replace
from io import BytesIO
from pathlib import Path

import pytest

from evaluation.sandbox.docker_backend import IMAGE, docker_client
from evaluation.sandbox.sessions import docker_images
from evaluation.sandbox.sessions.docker_images import (
    BASE_LABEL,
    ENVIRONMENT_LABEL,
    KIND_LABEL,
    cache_label,
    environment_image,
    image_tag,
    prune_environment_images,
)
from evaluation.sandbox.sessions.docker_sandbox import DockerSessionSandbox
from evaluation.sandbox.sessions.environments import EnvironmentCache, EnvironmentSpec, PreparedEnvironment
from evaluation.sandbox.sessions.host import SessionHost
from evaluation.sandbox.sessions.session import LimitReached
from tests.sessions_world import FILES, FIX_NEW, FIX_OLD, LIMITS, SPEC, Stepper

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module", autouse=True)
def _images_of_the_shared_environment_removed(environment: PreparedEnvironment) -> Iterator[None]:
    yield
    prune_environment_images(docker_client(), set(), cache=cache_label(environment.root.parent))


@pytest.fixture
def cache(cache_root: Path) -> Iterator[EnvironmentCache]:
    """A cache of this test's own; its images are removed with it."""
    cache = EnvironmentCache(cache_root)
    yield cache
    prune_environment_images(docker_client(), set(), cache=cache_label(cache.root))


@pytest.fixture
def docker_host(cache: EnvironmentCache) -> Iterator[SessionHost]:
    # On `cache`, so that its containers are gone before the cache's images are pruned.
    host = SessionHost(max_sessions=4, backend="docker", environments=cache)
    yield host
    host.shutdown()


def fresh(cache: EnvironmentCache, **extra: bytes) -> PreparedEnvironment:
    """An environment no other test (or checkout) has: its image is built here."""
    return cache.get(EnvironmentSpec(files={**FILES, "token.txt": uuid.uuid4().hex.encode(), **extra}))


def test_an_episode_in_a_container_earns_its_reward_and_forks(docker_host, environment):
    session = docker_host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
    step = Stepper(session)
    assert step.bash("git log --oneline --all | wc -l; python --version; id -u")["stdout"].splitlines()[0] == "1"
    step("edit", path="stats/core.py", old=FIX_OLD, new=FIX_NEW)
    assert step("run_tests")["exit_code"] == 0
    (child,) = docker_host.fork(session.id, 1)
    assert "middle - 1" in Stepper(child).bash("cat stats/core.py")["stdout"]
    daemon = step.bash("(sleep 1; touch late.txt) & echo started")
    assert daemon["stdout"] == "started\n"
    assert "late.txt" not in step.bash("sleep 1.5; ls")["stdout"]  # killed with its step
    verdict = session.submit()
    assert verdict.reward == 1.0, verdict.log
    assert child.submit().reward == 1.0


def test_a_conftest_hack_in_a_container_earns_nothing(docker_host, environment):
    session = docker_host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
    hack = "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    hack += "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
    Stepper(session)("write_file", path="conftest.py", content=hack)
    verdict = session.submit()
    assert verdict.reward == 0.0 and {"path": "conftest.py", "why": "protected path: restored from the task"} in (
        verdict.dropped
    )


# -- an image per prepared environment -----------------------------------------------------------


def test_the_environment_image_is_built_once_and_reused(cache):
    environment = fresh(cache)
    host = SessionHost(max_sessions=4, backend="docker", spares=0)
    try:
        built = docker_images.counters["built"]
        first = host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
        assert docker_images.counters["built"] == built + 1
        second = host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
        assert docker_images.counters["built"] == built + 1  # the second create built nothing
        image = docker_client().images.get(image_tag(environment.digest))
        assert first.sandbox.container.image.id == second.sandbox.container.image.id == image.id
        base = docker_client().images.get(IMAGE)
        assert image.labels[KIND_LABEL] == "session-environment"
        assert image.labels[ENVIRONMENT_LABEL] == environment.digest
        assert image.labels[BASE_LABEL] == base.id
    finally:
        host.shutdown()


def test_two_concurrent_creates_build_the_image_once(cache):
    environment = fresh(cache)
    host = SessionHost(max_sessions=4, backend="docker", spares=0)
    built = docker_images.counters["built"]
    barrier = threading.Barrier(2)
    made, failures = [], []

    def create() -> None:
        barrier.wait()
        try:
            made.append(host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC))
        except Exception as exc:  # reported below, with the thread's error
            failures.append(exc)

    threads = [threading.Thread(target=create) for _ in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failures
        assert docker_images.counters["built"] == built + 1
        assert made[0].sandbox.container.image.id == made[1].sandbox.container.image.id
    finally:
        host.shutdown()


def test_a_session_container_binds_nothing_of_the_tree(docker_host, environment):
    session = docker_host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
    container = session.sandbox.container
    container.reload()
    mounts = container.attrs["Mounts"]
    assert [(mount["Type"], mount["Destination"]) for mount in mounts] == [("bind", "/harness")]
    assert not any(str(environment.root) in mount.get("Source", "") for mount in mounts)
    assert set(container.attrs["HostConfig"]["Tmpfs"]) == {"/tmp"}  # /repo is the image's, not a tmpfs
    assert container.image.id == docker_client().images.get(image_tag(environment.digest)).id


def test_edits_stay_in_the_session_that_made_them(docker_host, cache):
    environment = fresh(cache)
    one = docker_host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
    two = docker_host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
    Stepper(one)("edit", path="stats/core.py", old=FIX_OLD, new=FIX_NEW)
    edits = Stepper(one).bash("rm README.md && echo new > new.txt && chmod +x new.txt && git status --short")
    assert edits["exit_code"] == 0, edits  # git works in a tree root owns: /etc/gitconfig says it is safe
    assert edits["stdout"].split("\n")[:3] == [" D README.md", " M stats/core.py", "?? new.txt"]
    seen = "cat stats/core.py; ls; git status --short"
    for other in (two, docker_host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)):
        observed = Stepper(other).bash(seen)["stdout"]
        assert "middle - 1" not in observed and "README.md" in observed and "new.txt" not in observed
        assert observed.endswith("tests\ntoken.txt\n")  # git status: nothing changed
    changes = {change["path"]: change for change in one.sandbox.export()}
    assert set(changes) == {"README.md", "new.txt", "stats/core.py"}
    assert changes["README.md"]["op"] == "delete" and changes["new.txt"]["executable"] is True


def test_a_session_writes_nothing_outside_its_tree_and_tmp(docker_host, environment):
    session = docker_host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC)
    for path in ("/x", "/var/tmp/x", "/run/lock/x", "/scratch/x", "/base/x", "/base/README.md", "/etc/gitconfig"):
        observed = Stepper(session).bash(f"echo x > {path}")
        assert observed["exit_code"] != 0, (path, observed)
    assert Stepper(session).bash("echo x > /tmp/x && echo x > x.txt")["exit_code"] == 0


def test_a_new_base_image_gives_a_new_environment_image(cache):
    client = docker_client()
    environment = fresh(cache)
    first = environment_image(client, environment, client.images.get(IMAGE).id)
    base_tag = f"taskplatform-session-test-base:{uuid.uuid4().hex[:12]}"
    dockerfile = f"FROM {IMAGE}\nLABEL org.taskplatform.test.base={base_tag}\n".encode()
    new_base, _log = client.images.build(fileobj=BytesIO(dockerfile), tag=base_tag, rm=True, pull=False)
    try:
        built = docker_images.counters["built"]
        second = environment_image(client, environment, new_base.id)
        assert second != first and docker_images.counters["built"] == built + 1
        assert client.images.get(image_tag(environment.digest)).labels[BASE_LABEL] == new_base.id
        sandbox = DockerSessionSandbox(environment, LIMITS, image=base_tag)
        try:
            sandbox.start()
            assert sandbox.container.image.id == second
            assert "token.txt" in sandbox.step({"kind": "bash", "command": "ls"}, timeout_s=10)["stdout"]
        finally:
            sandbox.close()
        # The image the new base replaced goes with the next prune; the current one stays.
        assert prune_environment_images(client, {environment.digest}, cache=cache_label(cache.root)) == [
            environment.digest
        ]
        assert client.images.get(image_tag(environment.digest)).id == second
    finally:
        prune_environment_images(client, set(), cache=cache_label(cache.root))
        client.images.remove(new_base.id)


def test_prune_removes_images_of_evicted_environments_and_keeps_used_ones(cache):
    client = docker_client()
    kept, evicted = fresh(cache), fresh(cache)
    host = SessionHost(max_sessions=4, backend="docker", spares=0, environments=cache)
    try:
        for environment in (kept, evicted):
            host.close(host.create(environment=environment, limits=LIMITS, verdict_spec=SPEC).id)
        session = host.create(environment=kept, limits=LIMITS, verdict_spec=SPEC)
        cache.max_bytes = 1
        assert cache.evict() == [evicted.digest]  # the other is in use: kept though over the size
        assert host.prune_environments() == [evicted.digest]
        assert {image.id for image in client.images.list(name=docker_images.REPOSITORY)} >= {
            session.sandbox.container.image.id
        }
        assert not client.images.list(filters={"label": f"{ENVIRONMENT_LABEL}={evicted.digest}"})
        host.reap()
        assert host.counters["environments_pruned"] == 1  # the reaper prunes at most once a minute
        # An image a container runs from stays, whatever the cache says.
        assert prune_environment_images(client, set(), cache=cache_label(cache.root)) == []
        host.close(session.id)
        assert prune_environment_images(client, set(), cache=cache_label(cache.root)) == [kept.digest]
    finally:
        host.shutdown()


def test_a_fork_in_a_container_carries_edits_deletions_and_new_files(docker_host, cache):
    parent = docker_host.create(environment=fresh(cache), limits=LIMITS, verdict_spec=SPEC)
    Stepper(parent)("edit", path="stats/core.py", old=FIX_OLD, new=FIX_NEW)
    Stepper(parent).bash("rm README.md && mkdir -p docs && echo notes > docs/notes.txt")
    (child,) = docker_host.fork(parent.id, 1)
    observed = Stepper(child).bash("ls; cat docs/notes.txt; grep -c middle stats/core.py")["stdout"]
    assert "README.md" not in observed and "notes\n" in observed and observed.endswith("3\n")
    assert child.submit().reward == 1.0


def test_a_tree_past_its_size_takes_no_further_step(docker_host, cache):
    limits = replace(LIMITS, tree_bytes=6 * 1024 * 1024)
    session = docker_host.create(environment=fresh(cache), limits=limits, verdict_spec=SPEC)
    step = Stepper(session)
    observed = step.bash("for i in 1 2 3 4; do head -c 2000000 /dev/zero > blob$i || exit 1; done")
    if session.sandbox.sized_layer:  # an engine that sizes the layer refuses the write itself
        assert observed["exit_code"] != 0
        return
    assert observed["tree_full"] is True and "over its limit" in observed["tree_error"]
    with pytest.raises(LimitReached, match="over its limit"):
        step.bash("rm blob*")
    assert session.submit().reward == 0.0  # submitting is still allowed; the fix was never made

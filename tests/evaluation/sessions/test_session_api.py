"""Agent sessions over REST, on the sample repository task (tests/tasks_app/repository_sample):
the episode loop, idempotency by key and by seq, forks, the verdict, the client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluation.models import AgentSession, SessionStep
from evaluation.verification.sessions import link
from tasks_app.content import VersionContent
from tasks_app.services.versions import task_create
from tests.conftest import token_client
from tests.tasks_app import repository_sample as sample

pytestmark = [pytest.mark.django_db, pytest.mark.bwrap]

REFERENCE = (sample.SAMPLE_DIR / "patches" / "reference.diff").read_text()


@pytest.fixture(autouse=True)
def embedded_host(settings, cache_root: Path) -> Iterator[None]:
    """A session host in this process, with environments where sandboxes reach them."""
    link.reset_embedded()
    settings.SESSIONS = {**settings.SESSIONS, "AGENT_SOCKET": "", "ENVIRONMENTS_DIR": str(cache_root),
                         "MAX_SESSIONS": 4, "MAX_SESSIONS_PER_USER": 6}  # fmt: skip
    yield
    link.reset_embedded()


@pytest.fixture
def version(curator):
    task = task_create(actor=curator, slug="textstats", title="textstats",
                       content=VersionContent.parse(sample.content_data()))  # fmt: skip
    return task.latest_version


@pytest.fixture
def api(trainer):
    return token_client(trainer, ["read", "session"])


def fix_steps() -> list[dict]:
    """The reference fix as an agent would make it: read, edit, run the visible tests."""
    words = (sample.SAMPLE_DIR / "repo" / "textstats" / "words.py").read_text()
    fixed = words.replace('text.split(" ")', "text.split()")
    assert fixed != words, "the sample's bug moved: update this test's edit"
    return [
        {"kind": "read_file", "path": "textstats/words.py"},
        {"kind": "write_file", "path": "textstats/words.py", "content": fixed},
        {"kind": "run_tests"},
    ]


def create(api, version, key: str = "", **body):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return api.post("/api/v1/sessions", {"version_hash": version.content_hash, **body}, format="json", **headers)


def test_an_episode_through_the_api_earns_the_reward(api, version):
    created = create(api, version, key="episode-1")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["state"] == "ready" and body["lease_expires_at"]
    listing = {entry["path"] for entry in body["first_observation"]["listing"]}
    assert "textstats/words.py" in listing and "tests/test_whitespace.py" not in listing  # hidden
    assert body["first_observation"]["statement"] == version.statement
    steps = f"/api/v1/sessions/{body['id']}/steps"
    for seq, action in enumerate(fix_steps(), start=1):
        answer = api.post(steps, {"seq": seq, "action": action}, format="json")
        assert answer.status_code == 200, answer.json()
        assert answer.json()["exit_code"] == 0, answer.json()
    replay = api.post(steps, {"seq": 2, "action": {"kind": "bash", "command": "rm -rf textstats"}}, format="json")
    assert replay.json()["replayed"] is True and replay.json()["seq"] == 2
    submitted = api.post(f"/api/v1/sessions/{body['id']}/submit")
    assert submitted.status_code == 200
    verdict = submitted.json()["verdict"]
    assert submitted.json()["reward"] == 1.0 and verdict["status"] == "passed", verdict
    assert submitted.json()["state"] == "done"
    assert all("message" not in entry for entry in verdict["outcomes"].values())  # hidden tests stay hidden
    transcript = api.get(f"/api/v1/sessions/{body['id']}").json()
    assert [step["seq"] for step in transcript["transcript"]] == [1, 2, 3]
    assert transcript["transcript"][1]["files_changed"][0]["path"] == "textstats/words.py"
    assert SessionStep.objects.filter(session_id=body["id"]).count() == 3


def test_the_same_key_answers_the_same_session(api, version):
    first = create(api, version, key="same")
    again = create(api, version, key="same")
    assert first.status_code == 201 and again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert AgentSession.objects.count() == 1


def test_forks_share_the_state_and_are_judged_apart(api, version):
    parent = create(api, version).json()
    steps = f"/api/v1/sessions/{parent['id']}/steps"
    for seq, action in enumerate(fix_steps()[:2], start=1):
        api.post(steps, {"seq": seq, "action": action}, format="json")
    forked = api.post(f"/api/v1/sessions/{parent['id']}/fork", {"n": 2}, format="json")
    assert forked.status_code == 201
    first, second = (child["id"] for child in forked.json()["sessions"])
    undo = {"seq": 1, "action": {"kind": "bash", "command": "git checkout -- textstats/words.py"}}
    api.post(f"/api/v1/sessions/{second}/steps", undo, format="json")
    got = api.post(f"/api/v1/sessions/{first}/submit").json()
    assert got["reward"] == 1.0, got
    got = api.post(f"/api/v1/sessions/{second}/submit").json()
    assert got["reward"] == 0.0, got
    assert AgentSession.objects.get(pk=first).parent_id == parent["id"]


def test_refusals_have_the_one_error_shape(api, version, curator):
    program = task_create(actor=curator, slug="prog", title="prog", content=VersionContent.parse({
        "statement": "add", "suite_kind": "assertions", "entry_point": "add",
        "hidden_tests": ["assert add(1, 2) == 3"],
        "solutions": [{"role": "reference", "label": "ref", "code": "def add(a, b):\n    return a + b\n"}],
    })).latest_version  # fmt: skip
    session = create(api, version).json()
    cases = [
        (lambda: api.post("/api/v1/sessions", {}, format="json"), 400, "invalid"),
        (lambda: create(api, program), 400, "invalid"),
        (lambda: api.post("/api/v1/sessions", {"version_hash": "f" * 64}, format="json"), 404, "not_found"),
        (lambda: create(api, version, limits={"max_steps": 0}), 400, "invalid_limits"),
        (
            lambda: api.post(
                f"/api/v1/sessions/{session['id']}/steps", {"seq": 1, "action": {"kind": "sudo"}}, format="json"
            ),
            400,
            "invalid_action",
        ),
        (
            lambda: api.post(
                f"/api/v1/sessions/{session['id']}/steps",
                {"seq": 4, "action": {"kind": "bash", "command": "true"}},
                format="json",
            ),
            409,
            "seq_conflict",
        ),
        (lambda: api.post(f"/api/v1/sessions/{session['id']}/fork", {"n": 0}, format="json"), 400, "invalid"),
        (lambda: api.get("/api/v1/sessions/" + "0" * 32), 404, "not_found"),
    ]
    for call, status, code in cases:
        answer = call()
        assert answer.status_code == status, (code, answer.json())
        assert answer.json()["error"]["code"] == code, answer.json()


def test_the_quota_answers_429_with_retry_after(api, version):
    for _ in range(4):
        assert create(api, version).status_code == 201
    full = create(api, version)
    assert full.status_code == 429 and int(full["Retry-After"]) >= 1
    assert AgentSession.objects.count() == 4  # the refused one left no row


def test_sessions_need_the_session_scope(trainer, version):
    reader = token_client(trainer, ["read"])
    answer = reader.post("/api/v1/sessions", {"version_hash": version.content_hash}, format="json")
    assert answer.status_code == 403


def test_closing_ends_the_sandbox(api, version):
    session = create(api, version).json()
    closed = api.delete(f"/api/v1/sessions/{session['id']}")
    assert closed.json()["state"] == "closed"
    step = api.post(f"/api/v1/sessions/{session['id']}/steps", {"seq": 1, "action": {"kind": "bash", "command": "ls"}},
                    format="json")  # fmt: skip
    assert step.status_code == 409 and step.json()["error"]["code"] == "session_state"


def test_the_host_reaper_and_a_restart_are_written_to_the_rows(api, version, trainer):
    import socket
    import time

    from evaluation.verification.sessions.link import _embedded, _record_reaped

    leased = create(api, version, lease_s=1).json()
    host = _embedded[0].host
    host.reap(time.time() + 5)
    _record_reaped(host.last_reaped)
    assert AgentSession.objects.get(pk=leased["id"]).state == "expired"
    # A row held by an embedded host whose process is gone fails at the next host's start;
    # one held by a live process (this one) is left alone.
    dead = AgentSession.objects.create(id="d" * 32, version=version, user=trainer, environment="0" * 64,
                                       lease_expires_at=leased["lease_expires_at"], state="ready",
                                       host=f"embedded:{socket.gethostname()}:999999999")  # fmt: skip
    live = create(api, version).json()
    link.reset_embedded()
    link.agent_link()
    dead.refresh_from_db()
    assert dead.state == "failed" and "ended" in dead.reason
    assert AgentSession.objects.get(pk=live["id"]).state == "ready"
    assert link._embedded[0].host.counters["lost_at_start"] == 1


def test_a_job_token_holds_sessions_on_its_snapshot_only(version, curator, reviewer, trainer):
    from rest_framework.test import APIClient

    from tests.trainer_bridge.test_pools import _approved
    from trainer_bridge.services.jobs import job_register
    from trainer_bridge.services.pools import pool_create, snapshot_create

    _approved(curator, reviewer, "only-program")  # the snapshot holds this task, not the repository one
    snapshot, _ = snapshot_create(pool=pool_create(slug="programs", title="Programs", criteria={}))
    job = job_register(user=trainer, name="agentic", snapshot_hash=snapshot.hash)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {job.secret}")
    refused = client.post("/api/v1/sessions", {"version_hash": version.content_hash}, format="json")
    assert refused.status_code == 403 and "not in this job's snapshot" in refused.json()["error"]["message"]
    assert AgentSession.objects.count() == 0

"""The session host agent over its Unix socket: the routes, the error shape, the quota."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from evaluation.sandbox.sessions.agent import Agent, serve
from evaluation.sandbox.sessions.agent_client import AgentUnavailable, SocketAgent
from tests.sessions_world import FILES, FIX_NEW, FIX_OLD, HIDDEN, SPEC

pytestmark = pytest.mark.bwrap

FILES_BODY = {path: {"data": base64.b64encode(data).decode(), "executable": False} for path, data in FILES.items()}
VERDICT = {"fail_to_pass": list(SPEC.fail_to_pass), "pass_to_pass": list(SPEC.pass_to_pass), "hidden": HIDDEN,
           "protected": list(SPEC.protected), "timeout_s": 60}  # fmt: skip


@pytest.fixture
def link(cache_root, tmp_path) -> Iterator[SocketAgent]:
    agent = Agent(environments=cache_root, max_sessions=3)
    server = serve(agent, tmp_path / "agent.sock")
    yield SocketAgent(str(tmp_path / "agent.sock"))
    server.shutdown()
    server.server_close()
    agent.shutdown()


def prepared(link: SocketAgent) -> str:
    status, meta = link.call("POST", "/environments", {"files": FILES_BODY})
    assert status == 200, meta
    return meta["digest"]


def test_an_episode_over_the_socket(link):
    digest = prepared(link)
    status, created = link.call("POST", "/sessions", {"environment": digest, "verdict": VERDICT, "statement": "Fix"})
    assert status == 201 and created["state"] == "ready"
    assert {entry["path"] for entry in created["first_observation"]["listing"]} == set(FILES)
    base = f"/sessions/{created['id']}"
    action = {"kind": "edit", "path": "stats/core.py", "old": FIX_OLD, "new": FIX_NEW}
    status, observation = link.call("POST", f"{base}/steps", {"seq": 1, "action": action})
    assert (
        status == 200 and observation["exit_code"] == 0 and observation["files_changed"][0]["path"] == "stats/core.py"
    )
    assert link.call("POST", f"{base}/steps", {"seq": 1, "action": {"kind": "bash", "command": "x"}})[1] == observation
    status, forked = link.call("POST", f"{base}/fork", {"n": 2})
    assert status == 201 and len(forked["sessions"]) == 2
    status, done = link.call("POST", f"{forked['sessions'][0]['id']}".join(["/sessions/", "/submit"]))
    assert status == 200 and done["verdict"]["reward"] == 1.0, done
    status, transcript = link.call("GET", base)
    assert status == 200 and transcript["steps"][0]["obs_hash"] == observation["obs_hash"]
    assert link.call("DELETE", base)[1]["state"] == "closed"


def test_errors_share_one_shape(link):
    digest = prepared(link)
    cases = [
        (("POST", "/sessions", {"environment": "0" * 64}), 404, "environment_missing"),
        (("POST", "/sessions", {"environment": digest, "limits": {"max_steps": -1}}), 400, "invalid_limits"),
        (("GET", "/sessions/nope", None), 404, "not_found"),
        (("POST", "/nowhere", {}), 404, "not_found"),
        (("POST", "/environments", {"files": {"../x": {"data": "eA=="}}}), 400, "invalid"),
        (("POST", "/environments", {"files": {"a.py": {"data": "not base64!"}}}), 400, "invalid"),
    ]
    for request, status, code in cases:
        answer = link.call(*request)
        assert answer[0] == status and answer[1]["error"]["code"] == code, (request, answer)
        assert answer[1]["error"]["message"]
    session = link.call("POST", "/sessions", {"environment": digest})[1]
    bad_step = link.call("POST", f"/sessions/{session['id']}/steps", {"seq": 1, "action": {"kind": "rm"}})
    assert bad_step[0] == 400 and bad_step[1]["error"]["code"] == "invalid_action"
    skipped = link.call(
        "POST", f"/sessions/{session['id']}/steps", {"seq": 5, "action": {"kind": "bash", "command": "true"}}
    )
    assert skipped[0] == 409 and skipped[1]["error"]["details"] == {"next_seq": 1}


def test_the_quota_answers_429_with_when_to_retry(link):
    digest = prepared(link)
    for _ in range(3):
        assert link.call("POST", "/sessions", {"environment": digest})[0] == 201
    status, body = link.call("POST", "/sessions", {"environment": digest})
    assert status == 429 and body["error"]["details"]["retry_after_s"] > 0


def test_a_setup_that_fails_is_the_task_fault_with_its_log(link):
    status, body = link.call("POST", "/environments", {"files": FILES_BODY, "setup_commands": ["echo doing; exit 7"]})
    assert status == 422 and body["error"]["code"] == "setup_failed" and "doing" in body["error"]["details"]["log"]


def test_no_agent_is_an_infrastructure_fault(tmp_path):
    with pytest.raises(AgentUnavailable, match="did not answer"):
        SocketAgent(str(tmp_path / "none.sock")).call("GET", "/health")

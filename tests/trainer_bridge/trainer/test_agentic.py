"""Agentic episodes in the bundled trainer, against a live platform holding the sample
repository task: the tool-call format, the replay of the reference patch as actions
(reward 1), GRPO groups forked from one set-up session, and the tiny model acting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.models import AgentSession
from evaluation.verification.sessions import link
from tasks_app.content import VersionContent
from tasks_app.models import State
from tasks_app.services import api_token_create, task_approve, task_create, task_transition
from tests.tasks_app import repository_sample as sample
from trainer_bridge import train
from trainer_bridge.services.pools import pool_create, snapshot_create
from trainer_bridge.trainer.agentic import observation_text, parse_action
from trainer_bridge.trainer.replay import patch_action

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), pytest.mark.bwrap]


# -- the format ------------------------------------------------------------------------------------


def test_actions_are_parsed_from_the_tool_call_format():
    assert parse_action('I will look.\n<action>{"kind": "bash", "command": "ls"}</action>') == (
        "action", {"kind": "bash", "command": "ls"}, "")  # fmt: skip
    assert parse_action("All done. <submit/>")[0] == "submit"
    assert parse_action("<submit />")[0] == "submit"
    for text, why in [("no tool call", "no <action>"), ("<action>{nope}</action>", "not JSON"),
                      ('<action>["bash"]</action>', '"kind"')]:  # fmt: skip
        kind, action, reason = parse_action(text)
        assert kind == "invalid" and action is None and why in reason


def test_observations_are_cut_to_the_budget():
    text = observation_text({"exit_code": 1, "stdout": "x" * 10_000, "files_changed": [
        {"path": "a.py", "operation": "modified"}]}, 500)  # fmt: skip
    assert len(text) < 600 and text.startswith("exit code 1") and "characters cut" in text
    assert "timed out" in observation_text({"timed_out": True, "exit_code": None}, 500)


def test_a_patch_is_replayed_as_write_apply_test_submit():
    plan = [patch_action("--- a/x\n+++ b/x\n", turn) for turn in (1, 2, 3, 4, 9)]
    assert [parse_action(p)[1]["kind"] for p in plan[:3]] == ["write_file", "bash", "run_tests"]
    assert plan[3] == plan[4] == "<submit/>"


# -- against a live platform ------------------------------------------------------------------------------


@pytest.fixture
def platform(live_server, curator, reviewer, trainer, admin_user, settings, monkeypatch, cache_root: Path):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # so the test database can be dropped
    link.reset_embedded()
    settings.SESSIONS = {**settings.SESSIONS, "AGENT_SOCKET": "", "ENVIRONMENTS_DIR": str(cache_root),
                         "MAX_SESSIONS": 16}  # fmt: skip
    task = task_create(actor=curator, slug="textstats", title="textstats",
                       content=VersionContent.parse(sample.content_data()))  # fmt: skip
    # Marked verified by an admin: this test is about the trainer, not the verification pipeline.
    task_transition(actor=curator, task=task, to_state=State.SUBMITTED)
    task_transition(actor=admin_user, task=task, to_state=State.VERIFIED, note="verified for the trainer's test")
    task_approve(actor=reviewer, task=task)
    snapshot, _ = snapshot_create(pool=pool_create(slug="repos", title="Repositories", criteria={}))
    token = api_token_create(user=trainer, name="trainer", scopes=["read", "write", "export", "export:tests",
                                                                   "reward", "session"]).secret  # fmt: skip
    yield {"url": live_server.url, "token": token, "snapshot": snapshot.hash}
    link.reset_embedded()


def _train(platform, tmp_path, name, *flags, capsys):
    out = tmp_path / name
    code = train.main(["--server", platform["url"], "--token", platform["token"], "--snapshot", platform["snapshot"],
                       "--output", str(out), "--job-name", name, "--batch-size", "1", "--group-size", "2",
                       "--train-steps", "1", *flags])  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()], summary


def test_a_replay_of_the_reference_patch_earns_1_in_forked_sessions(platform, tmp_path, capsys, client, trainer):
    rows, summary = _train(platform, tmp_path, "agentic-replay", "--policy", "replay", "--replay-mix", "reference=1",
                           "--agent-steps", "6", capsys=capsys)  # fmt: skip
    (row,) = rows
    assert row["reward_mean"] == 1.0 and row["pass_rate"] == 1.0, row
    assert row["turns_mean"] == 4.0  # write the patch, apply it, run the tests, submit
    assert summary["rollouts"] == {"created": 2, "skipped": 0}
    parent = AgentSession.objects.get(parent=None)
    assert parent.state == "closed"  # set up once, then forked into the group
    children = AgentSession.objects.filter(parent=parent)
    assert children.count() == 2 and {c.reward for c in children} == {1.0}
    assert all(c.step_count == 3 for c in children)
    # The job page lists each episode beside its reward; its session page holds the transcript.
    client.force_login(trainer)
    page = client.get(f"/jobs/{summary['job']}/").content.decode()
    assert page.count("transcript</a>") == 2
    transcript = client.get(f"/sessions/{children[0].id}/").content.decode()
    assert "write_file /tmp/replayed.diff" in transcript and "git apply" in transcript
    assert "+++ b/textstats/words.py" in transcript and "Verdict: passed" in transcript


def test_the_tiny_model_runs_agentic_episodes(platform, tmp_path, tiny_model_dir, capsys):
    flags = ["--model", str(tiny_model_dir), "--max-new-tokens", "16", "--max-prompt-tokens", "400",
             "--agent-steps", "2", "--seed", "3", "--resample-rounds", "0"]  # fmt: skip
    rows, _summary = _train(platform, tmp_path, "agentic-tiny", *flags, capsys=capsys)
    (row,) = rows
    assert row["episodes"] == 2.0 and row["unscored"] == 0.0  # judged, whatever the model wrote
    assert row["turns_mean"] == 2.0 and row["tokens"] > 0
    assert {c.state for c in AgentSession.objects.exclude(parent=None)} == {"done"}

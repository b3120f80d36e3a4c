"""The trainer's parts that need no platform: configuration from defaults, a file and
flags; the task sampler and its curriculum; what a failed attempt is told; which
groups carry a learning signal; the replay policy's draws; checkpoints."""

from __future__ import annotations

import json

import pytest

from trainer_bridge.trainer import checkpoint
from trainer_bridge.trainer.config import ConfigError, TrainConfig, parse_args
from trainer_bridge.trainer.data import TaskRecord, TaskSampler, read_export
from trainer_bridge.trainer.episodes import Episode, Turn, feedback
from trainer_bridge.trainer.loop import split_groups
from trainer_bridge.trainer.policy import Answer
from trainer_bridge.trainer.replay import ReplayPolicy

SNAPSHOT = "a" * 64
BASE = ["--token", "t", "--snapshot", SNAPSHOT, "--policy", "replay"]


def _task(name: str, band: str = "unknown", difficulty: float | None = None) -> TaskRecord:
    return TaskRecord(task_id=name, version_hash=name.ljust(64, "0"), prompt=({"role": "user", "content": name},),
                      band=band, difficulty=difficulty)  # fmt: skip


# -- configuration ---------------------------------------------------------------------------


def test_flags_win_over_the_file_which_wins_over_defaults(tmp_path, monkeypatch):
    monkeypatch.delenv("PLATFORM_TOKEN", raising=False)
    path = tmp_path / "run.toml"
    path.write_text(
        "group_size = 8\nlearning_rate = 0.001\nreplay_mix = {reference = 3, killed = 1}\ncurriculum = true\n"
    )
    config = parse_args([*BASE, "--config", str(path), "--group-size", "6"])
    assert (config.group_size, config.learning_rate, config.curriculum) == (6, 0.001, True)
    assert config.replay_mix == {"reference": 3.0, "killed": 1.0}
    assert config.batch_size == TrainConfig().batch_size
    assert "token" not in config.public()
    assert parse_args([*BASE, "--replay-mix", "reference=1,survived=0.5"]).replay_mix == {"reference": 1.0,
                                                                                           "survived": 0.5}  # fmt: skip


def test_the_token_may_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("PLATFORM_TOKEN", "from-env")
    assert parse_args(["--snapshot", SNAPSHOT, "--policy", "replay"]).token == "from-env"


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--group-size", "1"], "--group-size: at least 2"),
        (["--clip", "1.5"], "clip"),
        (["--learning-rate", "nan"], "--learning-rate"),
        (["--train-steps", "2.5"], "--train-steps"),
        (["--reward-mode", "partial"], "--reward-mode"),
        (["--replay-mix", "reference"], "--replay-mix"),
        (["--replay-mix", "gold=1"], "--replay-mix"),
        (["--replay-mix", "reference=0"], "--replay-mix"),
        (["--server", "ftp://x"], "server"),
        (["--turn-discount", "0"], "--turn-discount"),
        (["--policy", "oracle"], "policy"),
        (["--policy", "model", "--model", "/nowhere"], "no Hugging Face model in '/nowhere'"),
        (["--policy", "model", "--guide-share", "1"], "--guide-share"),
    ],
)
def test_a_bad_setting_is_named(argv, named):
    with pytest.raises(ConfigError, match=named.replace("-", r"\-")):
        parse_args([*BASE, *argv])


def test_every_bad_setting_is_reported_at_once_each_with_its_source(tmp_path, monkeypatch):
    monkeypatch.delenv("PLATFORM_TOKEN", raising=False)
    path = tmp_path / "run.toml"
    path.write_text('group_size = 1\nclip = 1.5\nseed = true\nepochs = 3\nreplay_mix = {reference = "x"}\n')
    with pytest.raises(ConfigError) as caught:
        parse_args(["--config", str(path), "--snapshot", SNAPSHOT, "--policy", "replay", "--train-steps", "2.5",
                    "--batch-size", "0", "--guide-share", "0.5"])  # fmt: skip
    assert sorted(caught.value.problems) == sorted([
        f"{path}: unknown settings epochs",
        f"{path}: group_size: at least 2 (advantages compare episodes within a group), got 1",
        f"{path}: clip: between 0 and 1, got 1.5",
        f"{path}: seed: a whole number expected, got True",
        f"{path}: replay_mix.reference: a number expected, got 'x'",
        "--train-steps: a whole number expected, got '2.5'",
        "--batch-size: at least 1, got '0'",
        "--guide-share: guides the model policy only",
        "token: an API token (--token or PLATFORM_TOKEN)",
    ])  # fmt: skip
    assert str(caught.value).startswith("bad configuration, 9 problems:\n  ")


def test_a_file_value_a_flag_replaces_is_still_checked_for_its_kind_not_its_bounds(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text("group_size = 1\n")
    assert parse_args([*BASE, "--config", str(path), "--group-size", "6"]).group_size == 6
    path.write_text('group_size = "many"\n')
    with pytest.raises(ConfigError, match="group_size: a whole number expected, got 'many'"):
        parse_args([*BASE, "--config", str(path), "--group-size", "6"])


def test_a_bad_file_is_named_with_what_is_wrong(tmp_path):
    for name, text, says in [("a.toml", "group_size = [", "not valid TOML"), ("b.json", "[1]", "a table"),
                             ("c.toml", "seed = true", "c.toml: seed: a whole number"),
                             ("d.toml", "epochs = 3", "unknown settings epochs")]:  # fmt: skip
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(ConfigError, match=says):
            parse_args([*BASE, "--config", str(path)])
    with pytest.raises(ConfigError, match="cannot read"):
        parse_args([*BASE, "--config", str(tmp_path / "missing.toml")])


# -- tasks -------------------------------------------------------------------------------------


def test_the_sampler_draws_each_task_once_an_epoch_the_same_way_for_a_seed_and_resumes():
    tasks = [_task(f"t{i}") for i in range(5)]
    first = TaskSampler(tasks, seed=3)
    drawn = first.take(5)
    assert sorted(t.task_id for t in drawn) == [f"t{i}" for i in range(5)]
    assert drawn == TaskSampler(tasks, seed=3).take(5)
    assert drawn != TaskSampler(tasks, seed=4).take(5)
    more = first.take(3)  # into the next epoch
    again = TaskSampler(tasks, seed=3)
    again.take(5)
    state = again.state()
    resumed = TaskSampler(tasks, seed=3)
    resumed.restore(state)
    assert resumed.take(3) == more


def test_the_curriculum_goes_from_easy_to_hard_and_unknown_last():
    tasks = [_task("hard", "TOO_HARD", 2.0), _task("mid-b", "LEARNABLE", 0.5), _task("easy", "TOO_EASY", -1.0),
             _task("mid-a", "LEARNABLE", 0.1), _task("new")]  # fmt: skip
    assert [t.task_id for t in TaskSampler(tasks, seed=9, curriculum=True).take(5)] == [
        "easy", "mid-a", "mid-b", "hard", "new"]  # fmt: skip


def test_a_bad_export_line_is_named(tmp_path):
    path = tmp_path / "s.jsonl"
    good = {"task_id": "a", "version_hash": "b" * 64, "prompt": [{"role": "user", "content": "x"}]}
    path.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"s\.jsonl:2"):
        read_export(path)
    path.write_text("")
    with pytest.raises(ValueError, match="no tasks"):
        read_export(path)


# -- episodes ------------------------------------------------------------------------------------


def _episode(group: int, *results: dict) -> Episode:
    ep = Episode(task=_task("t"), group=group, index=0)
    ep.turns = [Turn(answer=Answer(text="x"), result=r) for r in results]
    return ep


FAILURES = [{"name": "hidden[0]", "outcome": "failed", "message": "(hidden test)"},
            {"name": "visible[1]", "outcome": "failed", "message": "assert add(2, 2) == 4"}]  # fmt: skip
FAILED = {"status": "failed", "reward": 0.0, "tests": {"passed": 1, "total": 3, "failures": FAILURES}, "message": "",
          "stderr": "boom"}  # fmt: skip
PASSED = {"status": "passed", "reward": 1.0, "tests": {"passed": 3, "total": 3, "failures": []}}
BROKEN = {"status": "sandbox_error", "reward": None, "tests": {"passed": 0, "total": 0, "failures": []}}


def test_a_failed_attempt_is_told_what_failed_and_asked_for_the_whole_fix():
    text = feedback(FAILED)
    assert "1 of 3 tests passed" in text and "assert add(2, 2) == 4" in text and "(hidden test)" in text
    assert "stderr:\nboom" in text and "```python" in text
    ep = _episode(0, FAILED)
    query = ep.next_query()
    assert query.turn == 2 and [m["role"] for m in query.messages] == ["user", "assistant", "user"]
    assert query.messages[-1]["content"] == text


def test_an_episode_earns_its_last_verdict_discounted_and_a_broken_sandbox_earns_nothing():
    assert _episode(0, FAILED, PASSED).reward(0.5) == 0.5
    assert _episode(0, PASSED).reward(0.5) == 1.0
    broken = _episode(0, BROKEN)
    assert broken.finished and not broken.scored and broken.reward(1.0) is None


def test_groups_without_a_learning_signal_are_dropped():
    signal = [_episode(0, PASSED), _episode(0, FAILED)]
    same = [_episode(1, FAILED), _episode(1, FAILED)]
    lonely = [_episode(2, PASSED), _episode(2, BROKEN)]  # one scored episode: nothing to compare
    kept, dropped = split_groups(signal + same + lonely, discount=1.0)
    assert [[ep.group for ep in g] for g in kept] == [[0, 0]] and dropped == [1, 2]
    # The same final verdict after more turns is a different reward once discounted.
    kept, _ = split_groups([_episode(3, PASSED), _episode(3, FAILED, PASSED)], discount=0.9)
    assert len(kept) == 1


def test_the_replay_draws_the_same_programs_for_the_same_seed_and_refuses_what_it_lacks():
    member = {"version_hash": "t".ljust(64, "0"),
              "solutions": [{"kind": "reference", "code": "def f():\n    return 1\n"}],
              "mutants": [{"verdict": "killed", "code": "def f():\n    return 2\n"},
                          {"verdict": "equivalent", "code": "def f():\n    return 1 * 1\n"}]}  # fmt: skip
    policy = ReplayPolicy([member], mix={"reference": 1, "killed": 1})
    queries = [Episode(task=_task("t"), group=0, index=i).next_query() for i in range(20)]
    first = [a.text for a in policy.answer(queries, seed=1)]
    assert first == [a.text for a in policy.answer(queries, seed=1)]
    assert {a.source for a in policy.answer(queries, seed=1)} == {"reference", "killed"}
    assert all(a.text.startswith("```python\ndef f():") for a in policy.answer(queries, seed=1))
    with pytest.raises(ValueError, match="no program of the kinds asked for"):
        ReplayPolicy([member], mix={"adversarial": 1}).answer(queries[:1], seed=0)


@pytest.mark.parametrize(
    ("language", "fence"), [("cpp17", "cpp"), ("cpp20", "cpp"), ("go", "go"), ("python", "python")]
)
def test_a_task_in_another_language_is_answered_and_asked_again_in_its_own_fence(language, fence):
    record = {"task_id": "t", "version_hash": "t".ljust(64, "0"), "prompt": [{"role": "user", "content": "t"}],
              "suite_kind": "stdio", "language": language}  # fmt: skip
    task = TaskRecord.of(record)
    assert (task.language, task.fence) == (language, fence)
    member = {"version_hash": task.version_hash, "solutions": [{"kind": "reference", "code": "int main() {}\n"}]}
    (answer,) = ReplayPolicy([member], mix={"reference": 1}).answer([Episode(task=task, group=0, index=0).next_query()],
                                                                     seed=0)  # fmt: skip
    assert answer.text == f"```{fence}\nint main() {{}}\n```\n"
    assert feedback(FAILED, fence=fence).endswith(f"in one ```{fence} block.")


# -- checkpoints ------------------------------------------------------------------------------


def test_checkpoints_keep_the_two_newest_and_ignore_a_half_written_one(tmp_path):
    for step in (1, 2, 3):
        checkpoint.save(tmp_path, step, state={"sampler": {"epoch": 0, "position": step}})
    assert [p.name for p in sorted(tmp_path.glob("checkpoint-*"))] == ["checkpoint-000002", "checkpoint-000003"]
    (tmp_path / "checkpoint-000004").mkdir()  # a crash before trainer.json was written
    found = checkpoint.latest(tmp_path)
    assert found.name == "checkpoint-000003" and checkpoint.load(found)["sampler"]["position"] == 3


def test_a_device_that_is_not_there_stops_the_run_before_a_job_is_registered(tiny_model_dir, capsys):
    import torch

    from trainer_bridge import train

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    # No server answers at this address: the run must stop before it tries one.
    argv = ["--server", "http://127.0.0.1:9", "--token", "t", "--snapshot", SNAPSHOT, "--model", str(tiny_model_dir),
            "--device", "cuda"]  # fmt: skip
    assert train.main(argv) == 1
    assert "cuda" in capsys.readouterr().err.lower()


def test_the_documented_example_configuration_is_valid(tmp_path, monkeypatch):
    from pathlib import Path

    from trainer_bridge.trainer.config import read_file

    example = Path(__file__).resolve().parents[3] / "docs" / "train.example.toml"
    values = read_file(example)  # every key is a setting
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    config = parse_args(["--config", str(example), "--token", "t", "--model", str(model)])
    assert (config.group_size, config.max_steps, config.lora, config.curriculum) == (8, 3, True, True)
    assert values["model"] == "/models/coder-0.5b"


def test_guidance_is_decided_once_an_episode_every_turn_alike():
    from trainer_bridge.trainer.policy import GuidedPolicy

    guided = GuidedPolicy(model=None, replay=None, share=0.5)
    episodes = [Episode(task=_task(f"t{i}"), group=i, index=0, seed=7) for i in range(40)]
    first = [guided.is_guided(ep.next_query()) for ep in episodes]
    for ep in episodes:
        ep.turns.append(Turn(answer=Answer(text="x"), result=FAILED))
    assert [guided.is_guided(ep.next_query()) for ep in episodes] == first  # turn 2 as turn 1
    assert 5 < sum(first) < 35  # about half
    other_step = [guided.is_guided(Episode(task=ep.task, group=ep.group, index=0, seed=8).next_query())
                  for ep in episodes]  # fmt: skip
    assert other_step != first

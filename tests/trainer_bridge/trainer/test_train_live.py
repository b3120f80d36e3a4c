"""`python -m trainer_bridge.train` end to end against a live platform: real HTTP
(the live server), a real Celery worker on Redis, real bwrap sandboxes.

A replay of the task's references earns 1 and a replay of its killed mutants 0
(the reward path checked whole); two steps of the tiny model run multi-turn
repair episodes, update the policy, and give the same metrics for the same seed;
a run resumes from its checkpoint; every run posts its rollouts and the job's
page shows its curves."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evaluation.models import Attempt
from evaluation.verification.config import VerifyConfig
from evaluation.verification.inline import verification_run_inline
from tasks_app.services import api_token_create, task_approve
from tests.evaluation.conftest import needs_bwrap
from tests.evaluation.samples import CLAMP, STRONG_CLAMP_TESTS
from tests.evaluation.test_verification_pipeline import _clamp_task
from trainer_bridge import train
from trainer_bridge.models import TrainingJob
from trainer_bridge.services.pools import pool_create, snapshot_create

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_bwrap]

TIMING = {"step_s", "reward_wait_s", "reward_wait_fraction", "tokens_per_s"}


@pytest.fixture
def platform(live_server, curator, reviewer, trainer, workers, monkeypatch):
    """A verified, approved task in a frozen snapshot; a worker; the trainer's token."""
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # so the test database can be dropped
    task = _clamp_task(curator, hidden=STRONG_CLAMP_TESTS)
    verification_run_inline(version=task.latest_version,
                            config=VerifyConfig(repeats=1, mutants=6, mutation_seed=0, backend="bwrap"))  # fmt: skip
    task.refresh_from_db()
    task_approve(actor=reviewer, task=task)
    snapshot, _ = snapshot_create(pool=pool_create(slug="clamps", title="Clamps", criteria={}))
    workers.start("rewards@trainer", pool="threads")
    token = api_token_create(user=trainer, name="trainer", scopes=["read", "write", "export", "export:tests",
                                                                   "reward"]).secret  # fmt: skip
    return {"url": live_server.url, "token": token, "snapshot": snapshot.hash}


def _train(platform, tmp_path, name, *flags, capsys=None):
    out = tmp_path / name
    code = train.main(["--server", platform["url"], "--token", platform["token"], "--snapshot", platform["snapshot"],
                       "--output", str(out), "--job-name", name, "--batch-size", "1", "--group-size", "3",
                       "--reward-deadline-s", "60", *flags])  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1]) if capsys else None
    return out, summary


def _metrics(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_a_replay_of_references_earns_1_and_of_killed_mutants_0(platform, tmp_path, client, trainer, capsys):
    out, summary = _train(platform, tmp_path, "refs", "--policy", "replay", "--replay-mix", "reference=1",
                          "--train-steps", "2", capsys=capsys)  # fmt: skip
    assert [row["reward_mean"] for row in _metrics(out)] == [1.0, 1.0]
    assert summary["rollouts"] == {"created": 6, "skipped": 0}
    job = TrainingJob.objects.get(pk=summary["job"])
    assert job.state == "finished" and job.steps_done == 2
    assert Attempt.objects.filter(solver__name=job.solver, status="passed").count() == 6

    out, summary = _train(platform, tmp_path, "mutants", "--policy", "replay", "--replay-mix", "killed=1",
                          "--train-steps", "1", "--max-steps", "2", capsys=capsys)  # fmt: skip
    (row,) = _metrics(out)
    assert row["reward_mean"] == 0.0 and row["pass_rate"] == 0.0
    assert row["turns_mean"] == 2.0  # a failed attempt is shown its feedback and tries again

    client.force_login(trainer)
    page = client.get(reverse("jobs:detail", args=[summary["job"]])).content.decode()
    assert "reward_mean at step 0: 0" in page and "<svg" in page


def test_the_tiny_model_trains_two_steps_the_same_way_twice_and_resumes(platform, tmp_path, tiny_model_dir, capsys,
                                                                        client, trainer):  # fmt: skip
    flags = ["--model", str(tiny_model_dir), "--max-new-tokens", "24", "--max-prompt-tokens", "400",
             "--max-steps", "2", "--learning-rate", "0.01", "--kl-weight", "0.05", "--seed", "7"]  # fmt: skip
    first, summary = _train(platform, tmp_path, "tiny-a", *flags, "--train-steps", "2", capsys=capsys)
    second, _ = _train(platform, tmp_path, "tiny-b", *flags, "--train-steps", "2", capsys=capsys)
    rows = _metrics(first)
    assert [r["step"] for r in rows] == [0, 1]
    assert all(r["tokens"] > 0 or r["dropped_groups"] > 0 for r in rows)
    untimed = [[{k: v for k, v in r.items() if k not in TIMING} for r in _metrics(out)] for out in (first, second)]
    assert untimed[0] == untimed[1]  # same seed, same configuration: the same run
    assert summary["rollouts"]["created"] == sum(int(r["episodes"] - r["unscored"]) for r in rows)
    assert (first / "checkpoint-000002" / "policy").is_dir()

    # Resumed for one more step: it goes on from step 2, as a run of 3 steps would.
    third, _ = _train(platform, tmp_path, "tiny-a", *flags, "--train-steps", "3", "--resume", capsys=capsys)
    assert [r["step"] for r in _metrics(third)] == [0, 1, 2]
    job = TrainingJob.objects.get(pk=summary["job"])
    assert job.steps_done == 3 and job.state == "finished"

    client.force_login(trainer)
    page = client.get(reverse("jobs:detail", args=[job.pk])).content.decode()
    assert page.count("<svg") >= 2 and "loss" in page


def test_bad_configuration_is_refused_before_anything_starts(tmp_path, capsys):
    assert train.main(["--token", "t", "--snapshot", "abc", "--group-size", "1", "--policy", "model"]) == 2
    err = capsys.readouterr().err
    assert "snapshot" in err and "--group-size: at least 2" in err and "model:" in err
    bad = tmp_path / "train.toml"
    bad.write_text("group_size = 4\nlearning_rat = 0.1\n")
    assert train.main(["--config", str(bad), "--token", "t"]) == 2
    assert "learning_rat" in capsys.readouterr().err
    assert train.main(["--token", "t", "--batch-size", "two"]) == 2
    assert "--batch-size: a whole number expected" in capsys.readouterr().err


def test_guidance_shows_the_tiny_model_the_reference_and_it_learns_it(platform, tmp_path, tiny_model_dir, capsys):
    from trainer_bridge.trainer.data import read_export
    from trainer_bridge.trainer.hf_policy import HFPolicy

    flags = ["--model", str(tiny_model_dir), "--max-new-tokens", "200", "--max-prompt-tokens", "300",
             "--group-size", "4", "--guide-share", "0.5", "--learning-rate", "0.003", "--train-steps", "3",
             "--seed", "3"]  # fmt: skip
    out, summary = _train(platform, tmp_path, "guided", *flags, capsys=capsys)
    rows = _metrics(out)
    # A group holding a shown reference (reward 1) beside the model's own failures has an
    # advantage to learn from (one with none shown is dropped and replaced): each step learns.
    assert all(r["guided_episodes"] > 0 and r["loss"] != 0 and r["grad_norm"] > 0 for r in rows)
    # Only the model's own episodes are its rollouts, and its figures.
    own = sum(int(r["episodes"] - r["unscored"]) for r in rows)
    assert summary["rollouts"]["created"] == own and all(r["pass_rate"] == 0.0 for r in rows)

    # The reference the model was shown is now more likely under it than before.
    (task,) = read_export(out / "snapshot.jsonl")
    before = HFPolicy.load(tiny_model_dir, device="cpu", max_prompt_tokens=300, keep_reference=False)
    after = HFPolicy.load(tiny_model_dir, device="cpu", max_prompt_tokens=300, keep_reference=False)
    after.load_weights(out / "checkpoint-000003" / "policy")
    shown = "```python\n" + CLAMP.rstrip() + "\n```\n"

    def likelihood(policy):
        (generation,) = policy.score_texts([list(task.prompt)], [shown], max_new_tokens=200)
        return sum(generation.logprobs)

    assert likelihood(after) > likelihood(before) + 1.0

    # With LoRA only the adapter learns (and is what a checkpoint keeps); the KL reference
    # is the same network with the adapter off.
    lora, _ = _train(platform, tmp_path, "guided-lora", *flags[:-4], "--train-steps", "1", "--seed", "3", "--lora",
                     "--kl-weight", "0.05", capsys=capsys)  # fmt: skip
    (row,) = _metrics(lora)
    assert row["guided_episodes"] > 0 and row["loss"] != 0 and row["grad_norm"] > 0
    saved = lora / "checkpoint-000001" / "policy"
    assert (saved / "adapter_config.json").is_file() and not (saved / "model.safetensors").exists()

"""`python -m trainer_bridge.train`: GRPO over a snapshot with rewards from the
platform. See docs/trainer.md and `--help`.

    python -m trainer_bridge.train --token $TOKEN --snapshot $HASH --policy replay --train-steps 3
    python -m trainer_bridge.train --token $TOKEN --snapshot $HASH --model runs/tiny --train-steps 2

With a user token it registers a job against the snapshot (its token is kept in
OUTPUT/job.json, readable by the owner only, so `--resume` finds it); `--job N`
with that job's token continues an existing job. The last line on stdout is one
JSON object: the run's summary. Exit status: 0 done, 1 the run failed (the job
is marked failed), 2 a bad configuration.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from trainer_bridge.client import PlatformClient, PlatformError
from trainer_bridge.trainer.config import ConfigError, TrainConfig, parse_args
from trainer_bridge.trainer.data import read_export
from trainer_bridge.trainer.loop import Trainer


def job_client(config: TrainConfig, out_dir: Path) -> tuple[PlatformClient, dict[str, Any]]:
    """A client holding the job's token, and the job: registered now, named by --job,
    or, on --resume, the one this output folder was started with."""
    saved = out_dir / "job.json"
    if config.job is not None:
        client = PlatformClient(config.server, config.token)
        return client, client.job(config.job)
    if config.resume and saved.exists():
        known = json.loads(saved.read_text())
        client = PlatformClient(config.server, known["token"])
        job = client.job(known["id"])
        if job["state"] == "failed":  # the run that failed goes on from its last checkpoint
            job = {**job, **client.set_job_state(job["id"], "running")}
        return client, job
    user = PlatformClient(config.server, config.token)
    job = user.register_job(name=config.job_name or f"{config.policy}-seed{config.seed}", snapshot=config.snapshot,
                            reward_mode=config.reward_mode, steps_total=config.train_steps, config=config.public(),
                            with_hidden_tests=needs_solutions(config))  # fmt: skip
    out_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(saved, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"id": job["id"], "token": job["token"]}, out)
    return PlatformClient(config.server, job["token"]), job


def needs_solutions(config: TrainConfig) -> bool:
    """Whether the run reads the tasks' known solutions (which needs hidden-test access)."""
    return config.policy == "replay" or config.guide_share > 0


def make_policy(config: TrainConfig, client: PlatformClient, job: dict[str, Any]) -> tuple[Any, Any]:
    """(the policy, the HFPolicy behind it or None)."""
    replay = None
    if needs_solutions(config):
        from trainer_bridge.trainer.replay import ReplayPolicy

        members = list(client.solutions(pool=job["pool"], snapshot=job["snapshot"]))
        replay = ReplayPolicy(members, mix=config.replay_mix)
    if config.policy == "replay":
        return replay, None
    from trainer_bridge.trainer.hf_policy import HFPolicy, LoraSettings
    from trainer_bridge.trainer.policy import GuidedPolicy, ModelPolicy

    lora = LoraSettings(r=config.lora_r, alpha=config.lora_alpha) if config.lora else None
    model = HFPolicy.load(config.model, device=config.device, lora=lora, keep_reference=config.kl_weight > 0,
                          max_prompt_tokens=config.max_prompt_tokens)  # fmt: skip
    policy = ModelPolicy(model, max_new_tokens=config.max_new_tokens, temperature=config.temperature,
                         top_p=config.top_p)  # fmt: skip
    if replay is not None:
        return GuidedPolicy(policy, replay, share=config.guide_share), model
    return policy, model


def train(config: TrainConfig) -> dict[str, Any]:
    out_dir = Path(config.output)
    if config.policy == "model":  # a device that is not there fails here, before a job is registered for it
        from trainer_bridge.trainer.hf_policy import resolve_device

        resolve_device(config.device)
    client, job = job_client(config, out_dir)
    try:
        export = client.export(pool=job["pool"], snapshot=job["snapshot"], path=out_dir / "snapshot.jsonl")
        policy, model = make_policy(config, client, job)
        trainer = Trainer(config, client=client, job_id=job["id"], tasks=read_export(export), policy=policy,
                          model=model, out_dir=out_dir)  # fmt: skip
        summary = trainer.run()
    except BaseException:
        try:
            client.set_job_state(job["id"], "failed")
        except (PlatformError, OSError):
            pass  # the platform is what failed; the error that stopped the run is the one to show
        raise
    client.set_job_state(job["id"], "finished")
    return summary


def main(argv: list[str] | None = None) -> int:
    try:
        config = parse_args(argv)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        summary = train(config)
    except (PlatformError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One training run: for each step, a batch of tasks, a group of episodes each,
group-normalised advantages (groups whose rewards are all equal are dropped and
resampled, as DAPO does), one clipped policy-gradient update (grpo.py), metrics,
a checkpoint. At the end every episode's outcome goes back to the job as a
rollout.

Each step's randomness derives from (seed, step), not from a stream carried
through the run: a resumed run draws and samples what the interrupted one would
have."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from trainer_bridge.client import PlatformClient
from trainer_bridge.trainer import checkpoint
from trainer_bridge.trainer.agentic import REPOSITORY_KIND, run_agentic_episodes
from trainer_bridge.trainer.config import TrainConfig
from trainer_bridge.trainer.data import TaskRecord, TaskSampler
from trainer_bridge.trainer.episodes import Episode, RewardSource, Rollout, run_episodes
from trainer_bridge.trainer.policy import Policy
from trainer_bridge.trainer.progress import ProgressBar, StepLog


class Trainer:
    def __init__(
        self,
        config: TrainConfig,
        *,
        client: PlatformClient,
        job_id: int,
        tasks: list[TaskRecord],
        policy: Policy,
        model: Any = None,  # the HFPolicy behind a learnable policy
        out_dir: Path,
    ) -> None:
        self.config, self.client, self.job_id, self.policy, self.model = config, client, job_id, policy, model
        self.out_dir = out_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        self.sampler = TaskSampler(tasks, seed=config.seed, curriculum=config.curriculum)
        self.rewards = RewardSource(client, mode=config.reward_mode, seed=config.seed,
                                    concurrent=config.concurrent_rewards, batch=config.reward_batch,
                                    concurrency=config.reward_concurrency,
                                    deadline_s=config.reward_deadline_s)  # fmt: skip
        self.optimizer = None
        if model is not None and policy.learnable:
            from trainer_bridge.trainer import grpo

            self.optimizer = grpo.make_optimizer(model, config.learning_rate)
        self.metrics = StepLog(out_dir / "metrics.jsonl")
        self.rollouts = StepLog(out_dir / "rollouts.jsonl")
        self.step = 0  # steps done

    # -- the run ---------------------------------------------------------------------------------

    def run(self, *, progress: ProgressBar | None = None) -> dict[str, Any]:
        if self.config.resume:
            self._restore()
        progress = progress or ProgressBar(self.config.train_steps)
        while self.step < self.config.train_steps:
            index = self.step  # steps count from 0, as the job's metrics and curves do
            values, rollouts = self.train_step(index)
            self.step += 1
            self.metrics.append(index, values)
            for row in rollouts:
                self.rollouts.append(index, row)
            if self.config.post_metrics:
                self.client.post_metrics(self.job_id, [{"step": index, "values": values}])
            if self.step % self.config.checkpoint_every == 0 or self.step == self.config.train_steps:
                self._save()
            progress.show(self.step, values)
        self.rewards.close()
        posted = self.post_rollouts()
        rows = self.metrics.read()
        return {"job": self.job_id, "steps": self.step, "rollouts": posted,
                "reward_mean": statistics.fmean(r["reward_mean"] for r in rows) if rows else None,
                "last": rows[-1] if rows else None}  # fmt: skip

    def post_rollouts(self) -> dict[str, int]:
        """Every episode of the run, as the job's rollouts (a repeat is skipped by the platform)."""
        rows = [{k: v for k, v in row.items() if k != "step"} for row in self.rollouts.read()]
        return self.client.post_rollouts(self.job_id, rows) if rows else {"created": 0, "skipped": 0}

    # -- one step -----------------------------------------------------------------------------------

    def train_step(self, step: int) -> tuple[dict[str, float], list[dict[str, Any]]]:
        cfg = self.config
        started = time.monotonic()
        wait_before = self.rewards.wait_s
        tasks = self.sampler.take(cfg.batch_size)
        rollout = self._episodes(tasks, seed=_seed(cfg.seed, step, 0), first_group=0)
        episodes, generate_s, tokens = list(rollout.episodes), rollout.generate_s, rollout.tokens
        kept, dropped = split_groups(episodes, cfg.turn_discount)
        dropped_total = len(dropped)
        # Dynamic sampling: a group whose episodes all earned the same has no advantage to
        # learn from; draw other tasks in its place (a replay has nothing to learn: keep all).
        for round_ in range(1, cfg.resample_rounds + 1 if self.policy.learnable else 1):
            if not dropped:
                break
            more = self._episodes(self.sampler.take(len(dropped)), seed=_seed(cfg.seed, step, round_),
                                  first_group=1 + max(ep.group for ep in episodes))  # fmt: skip
            episodes += more.episodes
            generate_s, tokens = generate_s + more.generate_s, tokens + more.tokens
            again_kept, dropped = split_groups(more.episodes, cfg.turn_discount)
            kept += again_kept
            dropped_total += len(dropped)
        # A learning policy is judged on its own answers: episodes it was shown (guidance)
        # are learned from but neither counted in its figures nor posted as its rollouts.
        own = [ep for ep in episodes if not ep.guided] if self.policy.learnable else episodes
        values = self._outcome_metrics(own, dropped_total)
        if self.optimizer is not None:
            values["guided_episodes"] = float(len(episodes) - len(own))
            values.update(self._update(kept))
            values["tokens"] = float(tokens)
            values["tokens_per_s"] = tokens / generate_s if generate_s > 0 else 0.0
        wall = time.monotonic() - started
        waited = self.rewards.wait_s - wait_before
        values.update(step_s=wall, reward_wait_s=waited, reward_wait_fraction=waited / wall if wall > 0 else 0.0)
        return values, [self._rollout(step, ep) for ep in own if ep.scored]

    def _episodes(self, tasks: list[TaskRecord], *, seed: int, first_group: int) -> Rollout:
        """Episodes for `tasks`: program tasks through the reward API (episodes.py),
        repository tasks as agentic episodes in sessions (agentic.py); groups numbered apart."""
        cfg = self.config
        programs = [task for task in tasks if task.kind != REPOSITORY_KIND]
        repositories = [task for task in tasks if task.kind == REPOSITORY_KIND]
        rollout = Rollout([])
        if programs:
            rollout = run_episodes(self.policy, programs, group_size=cfg.group_size, max_steps=cfg.max_steps,
                                   rewards=self.rewards, seed=seed, generation_batch=cfg.generation_batch,
                                   first_group=first_group)  # fmt: skip
        if repositories:
            agentic = run_agentic_episodes(
                self.policy, repositories, client=self.client, group_size=cfg.group_size, max_steps=cfg.agent_steps,
                seed=seed, generation_batch=cfg.generation_batch, first_group=first_group + len(programs),
                observation_chars=cfg.observation_chars, step_timeout_s=cfg.step_timeout_s,
            )  # fmt: skip
            rollout.episodes += agentic.episodes
            rollout.generate_s += agentic.generate_s
            rollout.tokens += agentic.tokens
        return rollout

    def _outcome_metrics(self, episodes: list[Episode], dropped: int) -> dict[str, float]:
        scored = [ep for ep in episodes if ep.scored]
        rewards = [ep.reward(self.config.turn_discount) or 0.0 for ep in scored]
        return {
            "reward_mean": statistics.fmean(rewards) if rewards else 0.0,
            "reward_std": statistics.pstdev(rewards) if rewards else 0.0,
            "pass_rate": sum(ep.passed for ep in scored) / len(scored) if scored else 0.0,
            "turns_mean": statistics.fmean(len(ep.turns) for ep in episodes) if episodes else 0.0,
            "episodes": float(len(episodes)),
            "unscored": float(len(episodes) - len(scored)),
            "dropped_groups": float(dropped),
        }

    def _update(self, kept: list[list[Episode]]) -> dict[str, float]:
        from trainer_bridge.trainer import grpo

        samples = []
        for group in kept:
            rewards = [ep.reward(self.config.turn_discount) or 0.0 for ep in group]
            advantages = grpo.group_advantages(rewards, [0] * len(group))
            for ep, advantage in zip(group, advantages, strict=True):
                # Every turn of an episode shares its advantage: the final verdict judges them all.
                samples += [grpo.Sample(prompt_ids=t.answer.generation.prompt_ids,
                                        completion_ids=t.answer.generation.completion_ids,
                                        old_logprobs=t.answer.generation.logprobs, advantage=advantage)
                            for t in ep.turns]  # fmt: skip
        stats = grpo.grpo_update(self.model, samples, self.optimizer, clip=self.config.clip,
                                 kl_weight=self.config.kl_weight, micro_batch=self.config.micro_batch,
                                 max_grad_norm=self.config.max_grad_norm)  # fmt: skip
        return {name: float(value) for name, value in stats.items()}

    def _rollout(self, step: int, ep: Episode) -> dict[str, Any]:
        sample_id = f"job{self.job_id}-s{step}-g{ep.group}-e{ep.index}"
        row = {"version_hash": ep.task.version_hash, "sample_id": sample_id, "passed": ep.passed,
               "reward": ep.reward(self.config.turn_discount)}  # fmt: skip
        session = getattr(ep, "session", None)  # an agentic episode's: its transcript is the evidence
        if session is not None:
            row["session"] = session.id
        return row

    # -- checkpoints ------------------------------------------------------------------------------

    def _save(self) -> None:
        state = {"sampler": self.sampler.state(), "job": self.job_id, "config": self.config.public()}
        checkpoint.save(self.out_dir, self.step, state=state, model=self.model if self.optimizer else None,
                        optimizer=self.optimizer)  # fmt: skip

    def _restore(self) -> None:
        found = checkpoint.latest(self.out_dir)
        if found is None:
            return  # nothing saved yet: start from the beginning
        state = checkpoint.load(found, model=self.model if self.optimizer else None, optimizer=self.optimizer)
        mismatched = {k for k in ("snapshot", "seed", "policy", "model", "group_size", "batch_size")
                      if state["config"].get(k) != self.config.public().get(k)}  # fmt: skip
        if state["job"] != self.job_id or mismatched:
            differs = ", ".join(sorted(mismatched)) or "the job"
            raise ValueError(f"{found}: saved by another run (job {state['job']}; differs in {differs}); "
                             "use another --output to start afresh")  # fmt: skip
        self.step = int(state["step"])
        self.sampler.restore(state["sampler"])
        self.metrics.keep_first(self.step)
        self.rollouts.keep_first(self.step)


def split_groups(episodes: list[Episode], discount: float) -> tuple[list[list[Episode]], list[int]]:
    """(groups to learn from, ids of the groups dropped): a group is dropped when fewer
    than two of its episodes were scored or all scored ones earned the same."""
    groups: dict[int, list[Episode]] = {}
    for ep in episodes:
        groups.setdefault(ep.group, []).append(ep)
    kept, dropped = [], []
    for group_id, members in sorted(groups.items()):
        scored = [ep for ep in members if ep.scored]
        if len(scored) < 2 or len({ep.reward(discount) for ep in scored}) == 1:
            dropped.append(group_id)
        else:
            kept.append(scored)
    return kept, dropped


def _seed(seed: int, step: int, round_: int) -> int:
    return (seed * 1_000_003 + step * 101 + round_) % 2**31

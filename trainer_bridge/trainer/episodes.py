"""Episodes: a policy writes code for a task, the reward API runs it in a sandbox,
and, for up to `max_steps` turns, the policy sees the failing tests' output and
tries again. The state of a turn is the task plus the previous attempt and its
feedback. An episode earns its final verdict's reward, discounted by the turns
it used; one whose sandbox kept failing has no reward (never 0) and is left out."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from trainer_bridge.client import PlatformClient
from trainer_bridge.trainer.data import TaskRecord
from trainer_bridge.trainer.policy import Answer, Policy, Query

FEEDBACK_TESTS = 8  # failing tests quoted back to the policy
FEEDBACK_CHARS = 600  # of a message or of stderr


@dataclass
class Turn:
    answer: Answer
    prompt: tuple[dict[str, str], ...]
    result: dict[str, Any] | None = None

    @property
    def reward(self) -> float | None:
        return None if self.result is None else self.result.get("reward")

    @property
    def status(self) -> str:
        return "unscored" if self.result is None else self.result["status"]


@dataclass
class Episode:
    task: TaskRecord
    group: int
    index: int
    turns: list[Turn] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """Passed, or unscored (its sandbox kept failing: no feedback to act on)."""
        return bool(self.turns) and self.turns[-1].status in ("passed", "sandbox_error", "unscored")

    @property
    def scored(self) -> bool:
        return bool(self.turns) and self.turns[-1].reward is not None

    @property
    def passed(self) -> bool:
        return bool(self.turns) and self.turns[-1].status == "passed"

    def reward(self, discount: float) -> float | None:
        last = self.turns[-1].reward if self.turns else None
        return None if last is None else last * discount ** (len(self.turns) - 1)

    def next_query(self) -> Query:
        messages = self.task.prompt
        if self.turns:
            last = self.turns[-1]
            messages = (*self.task.prompt, {"role": "assistant", "content": last.answer.text},
                        {"role": "user", "content": feedback(last.result or {})})  # fmt: skip
        return Query(task=self.task, messages=messages, turn=len(self.turns) + 1, group=self.group,
                     episode=self.index)  # fmt: skip


def feedback(result: dict[str, Any]) -> str:
    """What the policy is told about a failed attempt: the verdict, the failing tests
    (hidden tests' messages stay hidden unless the token may read them), stderr."""
    tests = result.get("tests") or {}
    lines = [f"Your code did not pass: {result.get('status', 'failed')}, "
             f"{tests.get('passed', 0)} of {tests.get('total', 0)} tests passed."]  # fmt: skip
    for failure in (tests.get("failures") or [])[:FEEDBACK_TESTS]:
        lines.append(f"- {failure['name']} ({failure['outcome']}): {failure['message'][:FEEDBACK_CHARS]}")
    if result.get("message"):
        lines.append(result["message"][:FEEDBACK_CHARS])
    if result.get("stderr"):
        lines.append("stderr:\n" + result["stderr"][-FEEDBACK_CHARS:])
    lines.append("Fix it, and answer with the whole corrected code in one ```python block.")
    return "\n".join(lines)


class RewardSource:
    """Scores completions through the reward API: every completion of a turn in one
    call, sent in concurrent batches, or one completion after another (the baseline
    that bench/trainer.py compares against)."""

    def __init__(self, client: PlatformClient, *, mode: str, seed: int, concurrent: bool, batch: int,
                 concurrency: int, deadline_s: float) -> None:  # fmt: skip
        self.client, self.mode, self.seed, self.concurrent = client, mode, seed, concurrent
        self.batch, self.concurrency, self.deadline_s = batch, concurrency, deadline_s
        self.wait_s = 0.0  # time spent waiting for rewards, in all

    def score(self, pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        # A sampled NUL byte (a byte-level tokenizer can emit one) would make the API
        # refuse the whole batch, and no Python source may hold one anyway: it goes as
        # U+FFFD, which Python refuses as well outside strings and comments.
        pairs = [(digest, text.replace("\x00", "\ufffd")) for digest, text in pairs]
        started = time.monotonic()
        try:
            if self.concurrent:
                return self.client.rewards(pairs, reward=self.mode, seed=self.seed, batch_size=self.batch,
                                           concurrency=self.concurrency, deadline_s=self.deadline_s)  # fmt: skip
            return [self.client.rewards([pair], reward=self.mode, seed=self.seed, batch_size=1, concurrency=1,
                                        deadline_s=self.deadline_s)[0] for pair in pairs]  # fmt: skip
        finally:
            self.wait_s += time.monotonic() - started


@dataclass
class Rollout:
    episodes: list[Episode]
    generate_s: float = 0.0
    reward_s: float = 0.0
    tokens: int = 0


def run_episodes(
    policy: Policy, tasks: list[TaskRecord], *, group_size: int, max_steps: int, rewards: RewardSource, seed: int,
    first_group: int = 0,
) -> Rollout:  # fmt: skip
    """`group_size` episodes for each task, turn by turn: every unfinished episode's
    query goes to the policy together, and every answer to the reward API together."""
    episodes = [Episode(task=task, group=first_group + g, index=e) for g, task in enumerate(tasks)
                for e in range(group_size)]  # fmt: skip
    rollout = Rollout(episodes)
    for turn in range(1, max_steps + 1):
        active = [ep for ep in episodes if not ep.finished]
        if not active:
            break
        queries = [ep.next_query() for ep in active]
        started = time.monotonic()
        answers = policy.answer(queries, seed=seed * 1000 + turn)
        rollout.generate_s += time.monotonic() - started
        rollout.tokens += sum(len(a.generation.completion_ids) for a in answers if a.generation is not None)
        waited = rewards.wait_s
        results = rewards.score([(q.task.version_hash, a.text) for q, a in zip(queries, answers, strict=True)])
        rollout.reward_s += rewards.wait_s - waited
        for ep, query, answer, result in zip(active, queries, answers, results, strict=True):
            ep.turns.append(Turn(answer=answer, prompt=query.messages, result=result))
    return rollout

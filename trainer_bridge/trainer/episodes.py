"""Episodes: a policy writes code for a task, the reward API runs it in a sandbox,
and, for up to `max_steps` turns, the policy sees the failing tests' output and
tries again. The state of a turn is the task plus the previous attempt and its
feedback. An episode earns its final verdict's reward, discounted by the turns
it used; one whose sandbox kept failing has no reward (never 0) and is left out."""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
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
    seed: int = 0  # the step's: what is decided once an episode (guidance) derives from it
    turns: list[Turn] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """Passed, or unscored (its sandbox kept failing: no feedback to act on)."""
        return bool(self.turns) and self.turns[-1].status in ("passed", "sandbox_error", "checker_error", "unscored")

    @property
    def scored(self) -> bool:
        return bool(self.turns) and self.turns[-1].reward is not None

    @property
    def guided(self) -> bool:
        """Answered with known solutions, not by the policy (GuidedPolicy, ReplayPolicy)."""
        return any(turn.answer.source != "model" for turn in self.turns)

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
                        {"role": "user", "content": feedback(last.result or {}, fence=self.task.fence)})  # fmt: skip
        return Query(task=self.task, messages=messages, turn=len(self.turns) + 1, group=self.group,
                     episode=self.index, episode_seed=self.seed)  # fmt: skip


def feedback(result: dict[str, Any], *, fence: str = "python") -> str:
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
    lines.append(f"Fix it, and answer with the whole corrected code in one ```{fence} block.")
    return "\n".join(lines)


class RewardSource:
    """Scores completions through the reward API.

    Concurrent (the default): `submit` sends a chunk's completions in the
    background (batches sent side by side) and returns at once, so the policy
    generates the next chunk while the sandboxes run this one; `collect` waits
    for what is still out. Sequential (the baseline bench/trainer.py compares
    against): `submit` scores one completion after another before returning.
    `wait_s` counts only the time the trainer is blocked on rewards."""

    def __init__(self, client: PlatformClient, *, mode: str, seed: int, concurrent: bool, batch: int,
                 concurrency: int, deadline_s: float) -> None:  # fmt: skip
        self.client, self.mode, self.seed = client, mode, seed
        self.batch, self.concurrency, self.deadline_s = batch, concurrency, deadline_s
        self.wait_s = 0.0
        self._senders = ThreadPoolExecutor(concurrency, thread_name_prefix="rewards") if concurrent else None

    def submit(self, pairs: list[tuple[str, str]]) -> Future[list[dict[str, Any]]]:
        # A sampled NUL byte (a byte-level tokenizer can emit one) would make the API
        # refuse the whole batch, and no Python source may hold one anyway: it goes as
        # U+FFFD, which Python refuses as well outside strings and comments.
        pairs = [(digest, text.replace("\x00", "\ufffd")) for digest, text in pairs]
        if self._senders is not None:
            return self._senders.submit(self._score, pairs, self.batch, self.concurrency)
        done: Future[list[dict[str, Any]]] = Future()
        started = time.monotonic()
        try:
            done.set_result([self._score([pair], 1, 1)[0] for pair in pairs])
        finally:
            self.wait_s += time.monotonic() - started
        return done

    def collect(self, future: Future[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        started = time.monotonic()
        try:
            return future.result()
        finally:
            self.wait_s += time.monotonic() - started

    def _score(self, pairs: list[tuple[str, str]], batch: int, concurrency: int) -> list[dict[str, Any]]:
        return self.client.rewards(pairs, reward=self.mode, seed=self.seed, batch_size=batch,
                                   concurrency=concurrency, deadline_s=self.deadline_s)  # fmt: skip

    def close(self) -> None:
        if self._senders is not None:
            self._senders.shutdown(wait=True)


@dataclass
class Rollout:
    episodes: list[Episode]
    generate_s: float = 0.0
    tokens: int = 0


def run_episodes(
    policy: Policy, tasks: list[TaskRecord], *, group_size: int, max_steps: int, rewards: RewardSource, seed: int,
    generation_batch: int, first_group: int = 0,
) -> Rollout:  # fmt: skip
    """`group_size` episodes for each task, turn by turn. Within a turn the unfinished
    episodes' queries go to the policy `generation_batch` at a time, and each chunk's
    answers go to the reward API as soon as they are written (scored while the next
    chunk is generated); the turn ends when every verdict is in."""
    episodes = [Episode(task=task, group=first_group + g, index=e, seed=seed) for g, task in enumerate(tasks)
                for e in range(group_size)]  # fmt: skip
    rollout = Rollout(episodes)
    for turn in range(1, max_steps + 1):
        active = [ep for ep in episodes if not ep.finished]
        if not active:
            break
        waiting = []
        for n, start in enumerate(range(0, len(active), generation_batch)):
            chunk = active[start : start + generation_batch]
            queries = [ep.next_query() for ep in chunk]
            started = time.monotonic()
            answers = policy.answer(queries, seed=(seed * 1000 + turn) * 1000 + n)
            rollout.generate_s += time.monotonic() - started
            rollout.tokens += sum(len(a.generation.completion_ids) for a in answers if a.generation is not None)
            out = rewards.submit([(q.task.version_hash, a.text) for q, a in zip(queries, answers, strict=True)])
            waiting.append((chunk, answers, out))
        for chunk, answers, out in waiting:
            for ep, answer, result in zip(chunk, answers, rewards.collect(out), strict=True):
                ep.turns.append(Turn(answer=answer, result=result))
    return rollout

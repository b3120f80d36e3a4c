"""What the loop asks of a policy: answer a batch of queries (each a task in some
state of its episode) with completions. Two kinds: a learnable Hugging Face model
(ModelPolicy, over hf_policy.HFPolicy) and the replay of known solutions
(replay.ReplayPolicy), which checks the reward path and shows the loop without a
model."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Protocol

from trainer_bridge.trainer.data import TaskRecord


@dataclass(frozen=True)
class Query:
    task: TaskRecord
    messages: tuple[dict[str, str], ...]  # the state: the task, and the previous attempt with its feedback
    turn: int  # 1 for the first attempt
    group: int  # the task's group within the step
    episode: int  # the episode within its group
    episode_seed: int = 0  # the same for every turn of the episode


@dataclass
class Answer:
    text: str
    generation: Any = None  # hf_policy.Generation for a learnable policy: token ids and sampling log-probs
    source: str = "model"  # or the replayed solution's kind


class Policy(Protocol):
    learnable: bool

    def answer(self, queries: list[Query], *, seed: int) -> list[Answer]: ...


class ModelPolicy:
    """A local causal language model: samples completions for every query at once."""

    learnable = True

    def __init__(self, model: Any, *, max_new_tokens: int, temperature: float, top_p: float) -> None:
        self.model, self.max_new_tokens, self.temperature, self.top_p = model, max_new_tokens, temperature, top_p

    def answer(self, queries: list[Query], *, seed: int) -> list[Answer]:
        generations = self.model.generate([list(q.messages) for q in queries], max_new_tokens=self.max_new_tokens,
                                          temperature=self.temperature, top_p=self.top_p, seed=seed)  # fmt: skip
        return [Answer(text=g.text, generation=g) for g in generations]


class GuidedPolicy:
    """The model policy, with a share of its episodes' answers taken from the task's
    known solutions (a ReplayPolicy) and scored by the model as if it had sampled them:
    off-policy guidance. A group then holds a passing answer beside the model's own,
    so a model that never passes yet still gets an advantage to learn from. The
    outcome metrics count the model's own episodes only (loop.py)."""

    learnable = True

    def __init__(self, model: ModelPolicy, replay: Any, *, share: float) -> None:
        self.model, self.replay, self.share = model, replay, share

    def answer(self, queries: list[Query], *, seed: int) -> list[Answer]:
        guided = [self.is_guided(q) for q in queries]
        own = iter(self.model.answer([q for q, g in zip(queries, guided, strict=True) if not g], seed=seed))
        shown = [q for q, g in zip(queries, guided, strict=True) if g]
        replayed = self.replay.answer(shown, seed=seed) if shown else []
        generations = self.model.model.score_texts([list(q.messages) for q in shown], [a.text for a in replayed],
                                                   max_new_tokens=self.model.max_new_tokens)  # fmt: skip
        for answer, generation in zip(replayed, generations, strict=True):
            answer.generation = generation
        shown_answers = iter(replayed)
        return [next(shown_answers) if g else next(own) for g in guided]

    def is_guided(self, query: Query) -> bool:
        """Whether the episode's answers are shown, not sampled: decided once an episode
        (every turn alike: the key holds no turn), reproducibly from the step's seed."""
        if self.share <= 0:
            return False
        key = f"guide:{query.episode_seed}:{query.task.version_hash}:{query.group}:{query.episode}"
        draw = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64
        return draw < self.share

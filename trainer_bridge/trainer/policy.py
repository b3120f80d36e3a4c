"""What the loop asks of a policy: answer a batch of queries (each a task in some
state of its episode) with completions. Two kinds: a learnable Hugging Face model
(ModelPolicy, over hf_policy.HFPolicy) and the replay of known solutions
(replay.ReplayPolicy), which checks the reward path and shows the loop without a
model."""

from __future__ import annotations

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

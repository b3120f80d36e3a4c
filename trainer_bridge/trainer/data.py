"""The snapshot's tasks as the trainer sees them, and the order they are drawn in."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The curriculum's order: what the difficulty model says a policy passes most often first.
BAND_ORDER = {"TOO_EASY": 0, "LEARNABLE": 1, "TOO_HARD": 2}


@dataclass(frozen=True)
class TaskRecord:
    task_id: str
    version_hash: str
    prompt: tuple[dict[str, str], ...]  # chat messages: system, user
    band: str
    difficulty: float | None
    kind: str = ""  # the suite kind: "repository" tasks run as agentic episodes (agentic.py)
    language: str = "python"  # what an answer is written in, and fenced as

    @classmethod
    def of(cls, record: dict[str, Any]) -> TaskRecord:
        return cls(task_id=record["task_id"], version_hash=record["version_hash"],
                   prompt=tuple({"role": m["role"], "content": m["content"]} for m in record["prompt"]),
                   band=record.get("band") or "unknown", difficulty=record.get("difficulty"),
                   kind=record.get("suite_kind") or "", language=record.get("language") or "python")  # fmt: skip

    @property
    def fence(self) -> str:
        """The fence an answer's code block carries: the first the reward API's extraction
        takes for the language (evaluation/sandbox/languages.py), which is the language's
        own name but for both C++ standards. Written out: the trainer imports no platform code."""
        return _FENCES.get(self.language, self.language)


_FENCES = {"cpp17": "cpp", "cpp20": "cpp"}


def read_export(path: Path) -> list[TaskRecord]:
    """A JSONL export's records; a line that is not a record names the file and line."""
    tasks = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                tasks.append(TaskRecord.of(json.loads(line)))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not an export record ({exc})") from exc
    if not tasks:
        raise ValueError(f"{path}: the snapshot has no tasks")
    return tasks


def _curriculum_key(task: TaskRecord) -> tuple[int, bool, float]:
    return (BAND_ORDER.get(task.band, 3), task.difficulty is None, task.difficulty or 0.0)


class TaskSampler:
    """Draws batches of tasks without replacement within an epoch: shuffled by the
    seed each epoch, or, with the curriculum, in curriculum order (ties shuffled).
    Its state is two numbers, so a resumed run draws what the interrupted one would."""

    def __init__(self, tasks: list[TaskRecord], *, seed: int, curriculum: bool = False) -> None:
        if not tasks:
            raise ValueError("no tasks to sample from")
        self.tasks, self.seed, self.curriculum = list(tasks), seed, curriculum
        self.epoch, self.position = 0, 0
        self._order = self._epoch_order()

    def _epoch_order(self) -> list[TaskRecord]:
        order = sorted(self.tasks, key=lambda t: t.task_id)
        random.Random(f"{self.seed}:{self.epoch}").shuffle(order)  # noqa: S311 - a reproducible order, not a secret
        if self.curriculum:
            order.sort(key=_curriculum_key)  # stable: tasks of equal rank keep their shuffled order
        return order

    def take(self, n: int) -> list[TaskRecord]:
        drawn = []
        while len(drawn) < n:
            if self.position >= len(self._order):
                self.epoch, self.position = self.epoch + 1, 0
                self._order = self._epoch_order()
            drawn.append(self._order[self.position])
            self.position += 1
        return drawn

    def state(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position}

    def restore(self, state: dict[str, int]) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
        self._order = self._epoch_order()

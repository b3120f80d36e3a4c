"""A TRL `reward_funcs` entry: `GRPOTrainer(..., reward_funcs=[PlatformReward(...)])`.

TRL calls a reward function with the batch's `prompts` and `completions` (strings,
or lists of chat messages for conversational data) and every other dataset
column as a keyword argument: the exported snapshot's `version_hash` column
says which task each completion answers. It returns one float per completion;
`None` for a completion whose sandbox failed, which TRL leaves out of the
reward rather than counting it as wrong.
"""

from __future__ import annotations

from typing import Any

from trainer_bridge.client import PlatformClient


def completion_text(completion: Any) -> str:
    """The text of a completion: a string, or the content of its chat messages."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    if isinstance(completion, list):
        return "\n".join(completion_text(message) for message in completion)
    raise TypeError(f"a completion is a string or chat messages, not {type(completion).__name__}")


class PlatformReward:
    """Rewards from the platform for TRL; `__name__` names its column in TRL's logs."""

    def __init__(
        self,
        client: PlatformClient | None = None,
        *,
        reward: str | None = None,
        version_column: str = "version_hash",
        batch_size: int = 16,
        concurrency: int = 4,
        name: str = "platform_reward",
    ) -> None:
        self.client = client or PlatformClient()
        self.reward = reward
        self.version_column = version_column
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.__name__ = name
        self.last_results: list[dict[str, Any]] = []  # the full verdicts of the last call, for logging

    def __call__(self, prompts: Any = None, completions: Any = None, **columns: Any) -> list[float | None]:
        if completions is None:
            raise TypeError("TRL passes `completions`; none were given")
        hashes = columns.get(self.version_column)
        if hashes is None or len(hashes) != len(completions):
            raise ValueError(
                f"the dataset needs a `{self.version_column}` column (one per completion), as the snapshot export has"
            )
        pairs = [(h, completion_text(c)) for h, c in zip(hashes, completions, strict=True)]
        self.last_results = self.client.rewards(pairs, reward=self.reward, batch_size=self.batch_size,
                                                concurrency=self.concurrency)  # fmt: skip
        return [r["reward"] for r in self.last_results]

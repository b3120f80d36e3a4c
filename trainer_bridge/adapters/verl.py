"""verl's custom reward function: point `custom_reward_function.path` at this file
and `custom_reward_function.name` at `compute_score` (or `compute_score_batch`
with verl's batch reward manager).

verl passes each sample's `data_source`, the decoded `solution_str`, the
dataset's `reward_model.ground_truth` and its `extra_info`. Here the ground
truth is the task version's content hash (the export's `version_hash`), or a
dict holding it under `version_hash`. The server and token come from
PLATFORM_URL and PLATFORM_TOKEN. A completion whose sandbox keeps failing
raises RewardUnavailable: verl has no "no reward", and 0 would be a lie.
"""

from __future__ import annotations

import threading
from typing import Any

from trainer_bridge.client import PlatformClient, RewardUnavailable

_client: PlatformClient | None = None
_lock = threading.Lock()


def client() -> PlatformClient:
    global _client
    with _lock:
        if _client is None:
            _client = PlatformClient()
        return _client


def set_client(new: PlatformClient | None) -> None:
    """Use this client (a test's, or one built with other settings) from now on."""
    global _client
    with _lock:
        _client = new


def version_hash_of(ground_truth: Any, extra_info: Any = None) -> str:
    if isinstance(ground_truth, dict) and "version_hash" in ground_truth:
        return str(ground_truth["version_hash"])
    if isinstance(ground_truth, str) and ground_truth:
        return ground_truth
    if isinstance(extra_info, dict) and "version_hash" in extra_info:
        return str(extra_info["version_hash"])
    raise ValueError("ground_truth must be the task version's hash (the export's version_hash)")


def _score(result: dict[str, Any]) -> float:
    if result["reward"] is None:
        raise RewardUnavailable(f"no reward for {result['version_hash'][:12]}: {result['status']} {result['message']}")
    return float(result["reward"])


def compute_score(data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """One sample's reward."""
    (result,) = client().rewards([(version_hash_of(ground_truth, extra_info), solution_str)])
    return _score(result)


def compute_score_batch(
    data_sources: list[Any], solution_strs: list[str], ground_truths: list[Any], extra_infos: list[Any]
) -> list[float]:
    """A whole batch's rewards in one go (verl's batch reward manager)."""
    infos = extra_infos or [None] * len(solution_strs)
    pairs = [(version_hash_of(g, e), s) for g, e, s in zip(ground_truths, infos, solution_strs, strict=True)]
    return [_score(result) for result in client().rewards(pairs)]

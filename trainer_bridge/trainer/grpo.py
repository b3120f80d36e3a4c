"""GRPO: group-relative advantages, the clipped surrogate, a k3 KL penalty, one update.

Everything but `grpo_update` is a pure function of its inputs, so the algorithm is
tested on hand-built tensors; `grpo_update` ties them to a policy and an optimizer.
The loss is a token-level mean over the whole batch (as in DAPO): every token
weighs the same whatever the length of the completion it belongs to.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from trainer_bridge.trainer.hf_policy import HFPolicy


def _by_group(rewards: Sequence[float], groups: Sequence[Hashable]) -> dict[Hashable, list[float]]:
    if len(rewards) != len(groups):
        raise ValueError(f"{len(rewards)} rewards but {len(groups)} group keys")
    members: dict[Hashable, list[float]] = defaultdict(list)
    for reward, group in zip(rewards, groups, strict=True):
        members[group].append(float(reward))
    return members


def group_advantages(rewards: Sequence[float], groups: Sequence[Hashable], eps: float = 1e-6) -> list[float]:
    """(reward - group mean) / (group population std + eps); a group of equal rewards gives 0s."""
    members = _by_group(rewards, groups)
    stats: dict[Hashable, tuple[float, float] | None] = {}
    for group, values in members.items():
        if all(value == values[0] for value in values):
            # Decided exactly, not through the std: a mean of equal floats can be
            # off by an ulp, and that over eps would be a large bogus advantage.
            stats[group] = None
            continue
        mean = math.fsum(values) / len(values)
        std = math.sqrt(math.fsum((value - mean) ** 2 for value in values) / len(values))
        stats[group] = (mean, std)
    advantages = []
    for reward, group in zip(rewards, groups, strict=True):
        stat = stats[group]
        advantages.append(0.0 if stat is None else (float(reward) - stat[0]) / (stat[1] + eps))
    return advantages


@dataclass
class Sample:
    prompt_ids: list[int]
    completion_ids: list[int]
    old_logprobs: list[float]
    advantage: float


def clipped_policy_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO's clipped surrogate, negated and averaged over the valid tokens of the whole batch.

    Shapes: logp_new, logp_old, mask are (batch, tokens); advantages is (batch,) or
    (batch, tokens). A token counts as clipped when the clamp took its gradient away.
    """
    valid = mask.bool()
    if advantages.dim() == logp_new.dim() - 1:
        advantages = advantages.unsqueeze(-1)
    advantages = advantages.to(logp_new.dtype).expand_as(logp_new)
    # Padding positions may hold anything; zero their log-ratio so exp stays finite.
    log_ratio = torch.where(valid, logp_new - logp_old, torch.zeros_like(logp_new))
    ratio = torch.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip, 1.0 + clip) * advantages
    surrogate = torch.minimum(unclipped, clipped)
    count = valid.sum()
    denominator = count.clamp(min=1).to(logp_new.dtype)
    loss = -(surrogate * valid).sum() / denominator
    with torch.no_grad():
        was_clipped = ((ratio > 1.0 + clip) & (advantages > 0)) | ((ratio < 1.0 - clip) & (advantages < 0))
        n = max(int(count), 1)
        stats = {
            "clip_fraction": float((was_clipped & valid).sum()) / n,
            "ratio_mean": float((ratio * valid).sum()) / n,
        }
    return loss, stats


def kl_to_reference(logp_new: torch.Tensor, logp_ref: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The k3 estimator of KL(policy || reference), exp(d) - d - 1 with d = ref - new, token mean.

    Unbiased and never negative; expm1 keeps it accurate near d = 0, and the clamp
    removes the last rounding error there.
    """
    valid = mask.bool()
    delta = torch.where(valid, logp_ref - logp_new, torch.zeros_like(logp_new))
    per_token = (torch.expm1(delta) - delta).clamp(min=0.0)
    return (per_token * valid).sum() / valid.sum().clamp(min=1).to(logp_new.dtype)


def make_optimizer(policy: HFPolicy, lr: float) -> torch.optim.Optimizer:
    # No weight decay: with zero advantages and no KL an update must change nothing.
    return torch.optim.AdamW(policy.trainable_parameters(), lr=lr, weight_decay=0.0)


def _pad(rows: Sequence[torch.Tensor], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(row) for row in rows)
    padded = torch.zeros((len(rows), width), device=device)
    mask = torch.zeros((len(rows), width), dtype=torch.bool, device=device)
    for i, row in enumerate(rows):
        padded[i, : len(row)] = row
        mask[i, : len(row)] = True
    return padded, mask


def _pad_grad(rows: Sequence[torch.Tensor]) -> torch.Tensor:
    """Like _pad but keeps the autograd graph (stacking, not in-place writes into a buffer)."""
    width = max(len(row) for row in rows)
    return torch.stack([torch.nn.functional.pad(row, (0, width - len(row))) for row in rows])


def grpo_update(
    policy: HFPolicy,
    samples: list[Sample],
    optimizer: torch.optim.Optimizer,
    *,
    clip: float,
    kl_weight: float,
    micro_batch: int = 8,
    max_grad_norm: float = 1.0,
) -> dict[str, float]:
    """One optimizer step over all samples.

    1. Drop samples with empty completions; count the batch's tokens.
    2. Per micro-batch: score with the policy (and the reference when kl_weight > 0),
       and backpropagate the loss weighted by its share of the batch's tokens, so the
       summed gradient equals that of the full-batch token mean.
    3. Clip the gradient norm and step, unless the gradient is not finite.
    """
    zeros = {"loss": 0.0, "kl": 0.0, "clip_fraction": 0.0, "grad_norm": 0.0, "tokens": 0.0}
    if micro_batch < 1:
        raise ValueError("micro_batch must be at least 1")
    kept = [sample for sample in samples if sample.completion_ids]
    for sample in kept:
        if len(sample.old_logprobs) != len(sample.completion_ids):
            raise ValueError("a sample's old_logprobs and completion_ids differ in length")
    if not kept:
        return zeros
    total_tokens = sum(len(sample.completion_ids) for sample in kept)
    params = policy.trainable_parameters()
    device = policy.device
    loss_sum = kl_sum = clipped_sum = 0.0

    optimizer.zero_grad(set_to_none=True)
    # Train mode only matters for dropout (LoRA dropout); with none, scores equal
    # the eval-mode scores taken at sampling time and the first ratio is exactly 1.
    policy.model.train()
    try:
        for start in range(0, len(kept), micro_batch):
            chunk = kept[start : start + micro_batch]
            prompts = [sample.prompt_ids for sample in chunk]
            completions = [sample.completion_ids for sample in chunk]
            new_rows = policy.token_logprobs(prompts, completions)
            logp_new = _pad_grad(new_rows)
            old_rows = [torch.tensor(sample.old_logprobs, dtype=logp_new.dtype) for sample in chunk]
            logp_old, mask = _pad(old_rows, device)
            advantages = torch.tensor([sample.advantage for sample in chunk], dtype=logp_new.dtype, device=device)
            chunk_tokens = int(mask.sum())
            share = chunk_tokens / total_tokens
            loss, stats = clipped_policy_loss(logp_new, logp_old, advantages, mask, clip)
            if kl_weight > 0:
                ref_rows = policy.token_logprobs(prompts, completions, reference=True)
                logp_ref, _ = _pad(ref_rows, device)
                kl = kl_to_reference(logp_new, logp_ref, mask)
                loss = loss + kl_weight * kl
                kl_sum += float(kl.detach()) * chunk_tokens
            (loss * share).backward()
            loss_sum += float(loss.detach()) * chunk_tokens
            clipped_sum += stats["clip_fraction"] * chunk_tokens
    finally:
        policy.model.eval()

    limit = max_grad_norm if max_grad_norm and max_grad_norm > 0 else math.inf
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, limit))
    if math.isfinite(grad_norm):
        optimizer.step()
    # A non-finite gradient is dropped rather than stepped: one bad batch must not
    # turn every weight into NaN. The caller sees it in grad_norm.
    optimizer.zero_grad(set_to_none=True)
    return {
        "loss": loss_sum / total_tokens,
        "kl": kl_sum / total_tokens,
        "clip_fraction": clipped_sum / total_tokens,
        "grad_norm": grad_norm,
        "tokens": float(total_tokens),
    }

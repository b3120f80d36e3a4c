"""GRPO proven on numbers: advantages, the clip's gradient, the KL, and real updates
of the tiny model that move log-probabilities the way the algorithm says."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from trainer_bridge.trainer.grpo import (
    Sample,
    clipped_policy_loss,
    group_advantages,
    grpo_update,
    kl_to_reference,
    make_optimizer,
)
from trainer_bridge.trainer.hf_policy import HFPolicy, LoraSettings

PROMPT = [{"role": "user", "content": "Write a function that adds two numbers."}]
GOOD = "def add(a, b):\n    return a + b\n"
BAD = "The quick brown fox jumps over the lazy dog."


def _ids(policy: HFPolicy, text: str) -> list[int]:
    return policy.tokenizer(text, add_special_tokens=False)["input_ids"]


def _samples(policy: HFPolicy, completions: list[str], advantages: list[float]) -> list[Sample]:
    prompt = policy.encode_prompt(PROMPT)
    ids = [_ids(policy, text) for text in completions]
    with torch.no_grad():
        old = policy.token_logprobs([prompt] * len(ids), ids)
    return [
        Sample(prompt_ids=prompt, completion_ids=c, old_logprobs=o.tolist(), advantage=a)
        for c, o, a in zip(ids, old, advantages, strict=True)
    ]


def _summed(policy: HFPolicy, samples: list[Sample], *, reference: bool = False) -> list[float]:
    with torch.no_grad():
        scores = policy.token_logprobs(
            [s.prompt_ids for s in samples], [s.completion_ids for s in samples], reference=reference
        )
    return [float(score.sum()) for score in scores]


def _snapshot(policy: HFPolicy) -> dict[str, torch.Tensor]:
    return {name: param.detach().clone() for name, param in policy.model.named_parameters()}


@pytest.fixture
def policy(tiny_model_dir: Path) -> HFPolicy:
    return HFPolicy.load(tiny_model_dir, device="cpu")


# -- advantages -------------------------------------------------------------------


def test_group_advantages_normalise_within_each_group() -> None:
    rewards = [1.0, 0.0, 0.0, 1.0, 0.5, 0.5, 0.2, 0.4, 0.9]
    groups = ["a", "a", "a", "a", "b", "b", "c", "c", "c"]
    adv = group_advantages(rewards, groups)
    # Group a: mean 0.5, population std 0.5.
    assert adv[:4] == pytest.approx([1.0, -1.0, -1.0, 1.0], abs=1e-5)
    assert adv[4:6] == [0.0, 0.0]
    c = adv[6:]
    assert sum(c) == pytest.approx(0.0, abs=1e-9)
    mean = (0.2 + 0.4 + 0.9) / 3
    std = math.sqrt(sum((r - mean) ** 2 for r in (0.2, 0.4, 0.9)) / 3)
    assert c == pytest.approx([(r - mean) / (std + 1e-6) for r in (0.2, 0.4, 0.9)])
    assert sum(x * x for x in c) / 3 == pytest.approx(1.0, abs=1e-4)


def test_group_of_equal_rewards_gives_exact_zeros() -> None:
    # 0.1 * 3 / 3 is not 0.1 in floats: equality must be decided exactly, not by the std.
    assert group_advantages([0.1, 0.1, 0.1], [7, 7, 7]) == [0.0, 0.0, 0.0]


def test_rewards_and_groups_must_pair_up() -> None:
    with pytest.raises(ValueError):
        group_advantages([1.0], ["a", "b"])


# -- the clipped surrogate and the KL -----------------------------------------------


def _grad_of_loss(ratio: float, advantage: float, clip: float = 0.2) -> float:
    logp_old = torch.tensor([[-1.0]])
    logp_new = (logp_old + math.log(ratio)).clone().requires_grad_(True)
    loss, _ = clipped_policy_loss(logp_new, logp_old, torch.tensor([advantage]), torch.tensor([[True]]), clip)
    loss.backward()
    return float(logp_new.grad[0, 0])


def test_clip_removes_the_gradient_only_in_the_direction_that_matters() -> None:
    assert _grad_of_loss(1.5, 1.0) == 0.0  # already much more likely, good token: stop pushing
    assert _grad_of_loss(0.5, -1.0) == 0.0  # already much less likely, bad token: stop pushing
    assert _grad_of_loss(1.05, 1.0) == pytest.approx(-1.05)  # inside: d(-ratio*A)/dlogp = -ratio*A
    assert _grad_of_loss(0.95, -1.0) == pytest.approx(0.95)
    assert _grad_of_loss(1.5, -1.0) == pytest.approx(1.5)  # pessimistic side: not clipped
    assert _grad_of_loss(0.5, 1.0) == pytest.approx(-0.5)


def test_clipped_loss_is_a_token_mean_over_the_batch_with_stats() -> None:
    logp_old = torch.zeros(2, 3)
    logp_new = torch.log(torch.tensor([[1.5, 1.0, 1.0], [0.5, 1.0, 9.0]])).requires_grad_(True)
    mask = torch.tensor([[True, True, True], [True, True, False]])  # last token is padding
    loss, stats = clipped_policy_loss(logp_new, logp_old, torch.tensor([1.0, -1.0]), mask, 0.2)
    # surrogates: row 0 -> 1.2, 1, 1 (A=+1, first clipped); row 1 -> -0.8, -1 (A=-1, first clipped).
    assert float(loss.detach()) == pytest.approx(-(1.2 + 1 + 1 - 0.8 - 1) / 5)
    assert stats["clip_fraction"] == pytest.approx(2 / 5)
    assert stats["ratio_mean"] == pytest.approx((1.5 + 1 + 1 + 0.5 + 1) / 5)
    loss.backward()
    assert logp_new.grad[1, 2] == 0.0  # padding never learns


def test_kl_k3_is_zero_at_the_reference_and_positive_elsewhere() -> None:
    mask = torch.tensor([[True, True, False]])
    same = torch.tensor([[-1.0, -2.0, -3.0]])
    assert float(kl_to_reference(same, same, mask)) == 0.0
    new = torch.tensor([[-1.0, -2.5, 50.0]])  # the padded 50 must not count
    d = torch.tensor([0.0, 0.5])
    expected = float((torch.exp(d) - d - 1).sum() / 2)
    assert float(kl_to_reference(new, same, mask)) == pytest.approx(expected)
    generator = torch.Generator().manual_seed(0)
    a, b = torch.randn(4, 16, generator=generator), torch.randn(4, 16, generator=generator)
    assert float(kl_to_reference(a, b, torch.ones(4, 16, dtype=torch.bool))) > 0


# -- real updates of the tiny model -------------------------------------------------


def test_update_raises_the_rewarded_completion_and_lowers_the_punished_one(policy: HFPolicy) -> None:
    samples = _samples(policy, [GOOD, BAD], [1.0, -1.0])
    before = _summed(policy, samples)
    stats = grpo_update(policy, samples, make_optimizer(policy, 1e-2), clip=0.2, kl_weight=0.0)
    after = _summed(policy, samples)
    assert after[0] > before[0] + 0.5
    assert after[1] < before[1] - 0.5
    # Fresh samples: the ratio starts at 1, so nothing is clipped on the first step.
    assert stats["clip_fraction"] == 0.0
    assert stats["tokens"] == sum(len(s.completion_ids) for s in samples)
    assert stats["grad_norm"] > 0


def test_zero_advantages_without_kl_move_nothing(policy: HFPolicy) -> None:
    samples = _samples(policy, [GOOD, BAD, "x = 1"], [0.0, 0.0, 0.0])
    start = _snapshot(policy)
    grpo_update(policy, samples, make_optimizer(policy, 1e-2), clip=0.2, kl_weight=0.0)
    for name, param in policy.model.named_parameters():
        assert torch.equal(param, start[name]), name


def test_kl_pulls_a_drifted_policy_back_to_the_reference(policy: HFPolicy) -> None:
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for param in policy.trainable_parameters():
            param.add_(0.05 * torch.randn(param.shape, generator=generator))

    def kl() -> float:
        prompts, completions = [s.prompt_ids for s in samples], [s.completion_ids for s in samples]
        with torch.no_grad():
            new = torch.cat(policy.token_logprobs(prompts, completions))
            ref = torch.cat(policy.token_logprobs(prompts, completions, reference=True))
        return float(kl_to_reference(new[None], ref[None], torch.ones(1, len(new), dtype=torch.bool)))

    # Old log-probs from the drifted policy, as if it had sampled these itself.
    samples = _samples(policy, [GOOD, BAD], [0.0, 0.0])
    drifted = kl()
    assert drifted > 1e-3
    optimizer = make_optimizer(policy, 1e-3)
    stats = grpo_update(policy, samples, optimizer, clip=0.2, kl_weight=1.0)
    assert stats["kl"] == pytest.approx(drifted, rel=1e-4)
    assert kl() < drifted


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_micro_batches_give_the_full_batch_step(tiny_model_dir: Path, optimizer: str) -> None:
    texts = [GOOD, BAD, "x = 1", "for i in range(3):\n    print(i)\n"]
    advantages = [1.0, -1.0, 0.5, -0.5]
    results = []
    for micro_batch in (1, len(texts)):
        policy = HFPolicy.load(tiny_model_dir, device="cpu")
        samples = _samples(policy, texts, advantages)
        if optimizer == "sgd":  # the step is the gradient itself: equal up to float summation order
            step = torch.optim.SGD(policy.trainable_parameters(), lr=0.1)
        else:
            step = make_optimizer(policy, 1e-3)
        stats = grpo_update(policy, samples, step, clip=0.2, kl_weight=0.1, micro_batch=micro_batch)
        results.append((_snapshot(policy), stats))
    (one, stats_one), (full, stats_full) = results
    # Adam's first step is about lr * sign(grad), so rounding in near-zero gradients
    # shows up at a small fraction of lr; SGD shows it at float precision.
    atol = 1e-8 if optimizer == "sgd" else 1e-5
    for name in one:
        assert torch.allclose(one[name], full[name], rtol=0, atol=atol), name
    for key in ("loss", "kl", "grad_norm", "tokens"):
        assert stats_one[key] == pytest.approx(stats_full[key], rel=1e-5, abs=1e-7), key


def test_empty_completions_are_skipped_and_no_samples_do_nothing(policy: HFPolicy) -> None:
    start = _snapshot(policy)
    optimizer = make_optimizer(policy, 1e-2)
    assert grpo_update(policy, [], optimizer, clip=0.2, kl_weight=0.0) == {
        "loss": 0.0,
        "kl": 0.0,
        "clip_fraction": 0.0,
        "grad_norm": 0.0,
        "tokens": 0.0,
    }
    empty = Sample(prompt_ids=policy.encode_prompt(PROMPT), completion_ids=[], old_logprobs=[], advantage=1.0)
    assert grpo_update(policy, [empty], optimizer, clip=0.2, kl_weight=0.0)["tokens"] == 0.0
    for name, param in policy.model.named_parameters():
        assert torch.equal(param, start[name]), name
    samples = [*_samples(policy, [GOOD], [1.0]), empty]
    assert grpo_update(policy, samples, optimizer, clip=0.2, kl_weight=0.0)["tokens"] == len(samples[0].completion_ids)


def test_lora_update_changes_only_the_adapter(tiny_model_dir: Path) -> None:
    policy = HFPolicy.load(tiny_model_dir, device="cpu", lora=LoraSettings(r=4, alpha=8))
    trainable = {name for name, param in policy.model.named_parameters() if param.requires_grad}
    assert trainable and all("lora_" in name for name in trainable)
    samples = _samples(policy, [GOOD, BAD], [1.0, -1.0])
    reference_before = _summed(policy, samples, reference=True)
    start = _snapshot(policy)
    optimizer = make_optimizer(policy, 1e-2)
    for _ in range(2):  # LoRA's B starts at zero, so A only gets a gradient from the second step on
        grpo_update(policy, samples, optimizer, clip=0.2, kl_weight=0.1)
    changed = {name for name, param in policy.model.named_parameters() if not torch.equal(param, start[name])}
    assert changed and changed <= trainable
    assert any("lora_A" in name for name in changed) and any("lora_B" in name for name in changed)
    assert _summed(policy, samples, reference=True) == reference_before
    after = _summed(policy, samples)
    assert after[0] > reference_before[0] and after[1] < reference_before[1]

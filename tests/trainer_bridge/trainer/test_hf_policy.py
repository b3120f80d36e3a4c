"""HFPolicy on the tiny model: seeded sampling, log-probs that match the update's,
prompt truncation, greedy decoding, device names and checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from trainer_bridge.trainer.grpo import Sample, grpo_update, make_optimizer
from trainer_bridge.trainer.hf_policy import HFPolicy, LoraSettings, resolve_device

PROMPTS = [
    [{"role": "user", "content": "Write a function that adds two numbers."}],
    [
        {"role": "system", "content": "You write Python."},
        {"role": "user", "content": "Return the reversed string."},
    ],
]


@pytest.fixture
def policy(tiny_model_dir: Path) -> HFPolicy:
    return HFPolicy.load(tiny_model_dir, device="cpu")


def _as_tuples(generations: list) -> list[tuple]:
    return [(g.prompt_ids, g.completion_ids, g.text) for g in generations]


def test_generation_is_seeded(policy: HFPolicy) -> None:
    first = policy.generate(PROMPTS, max_new_tokens=12, seed=3)
    again = policy.generate(PROMPTS, max_new_tokens=12, seed=3)
    other = policy.generate(PROMPTS, max_new_tokens=12, seed=4)
    assert _as_tuples(first) == _as_tuples(again)
    assert [g.completion_ids for g in first] != [g.completion_ids for g in other]
    assert all(g.completion_ids for g in first)
    for g, prompt in zip(first, PROMPTS, strict=True):
        assert g.prompt_ids == policy.encode_prompt(prompt)
        assert len(g.completion_ids) <= 12
        assert g.text == policy.tokenizer.decode(g.completion_ids, skip_special_tokens=True)


def test_generation_does_not_reseed_the_callers_random_stream(policy: HFPolicy) -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    policy.generate(PROMPTS[:1], max_new_tokens=4, seed=9)
    assert torch.equal(torch.rand(3), expected)


def test_generation_logprobs_are_the_update_logprobs(policy: HFPolicy) -> None:
    generations = policy.generate(PROMPTS * 2, max_new_tokens=10, seed=0)
    rescored = policy.token_logprobs([g.prompt_ids for g in generations], [g.completion_ids for g in generations])
    for g, scores in zip(generations, rescored, strict=True):
        assert len(g.logprobs) == len(g.completion_ids)
        assert all(lp <= 0 for lp in g.logprobs)
        assert torch.allclose(torch.tensor(g.logprobs), scores.detach(), atol=1e-5)
    # Fed straight into an update, nothing is clipped: the ratio starts at 1.
    samples = [
        Sample(prompt_ids=g.prompt_ids, completion_ids=g.completion_ids, old_logprobs=g.logprobs, advantage=adv)
        for g, adv in zip(generations, [1.0, -1.0, -1.0, 1.0], strict=True)
    ]
    stats = grpo_update(policy, samples, make_optimizer(policy, 1e-3), clip=1e-3, kl_weight=0.0)
    assert stats["clip_fraction"] == 0.0


def test_generation_stops_at_an_end_token_and_keeps_it_for_the_update(policy: HFPolicy) -> None:
    tokenizer = policy.tokenizer
    end_ids = {tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|end|>")}
    generations = policy.generate(PROMPTS * 8, max_new_tokens=60, seed=0)
    stopped = [g for g in generations if g.completion_ids[-1] in end_ids]
    # The random tiny model picks an end token now and then; rows that stop early
    # are padded by generate while the others go on, and that padding must not leak:
    # a completion ends at its first end token, or runs to max_new_tokens.
    assert stopped and len(stopped) < len(generations)
    for g in generations:
        assert g in stopped or len(g.completion_ids) == 60
        assert not end_ids & set(g.completion_ids[:-1])  # an end token only ever last
        assert len(g.logprobs) == len(g.completion_ids)  # stopping is scored like any token
    for g in stopped:
        assert "<|" not in g.text  # the text has no special tokens


def test_prompt_keeps_its_last_tokens(tiny_model_dir: Path) -> None:
    long_prompt = [{"role": "user", "content": "Fix the bug and try again. " * 40}]
    full = HFPolicy.load(tiny_model_dir, device="cpu").encode_prompt(long_prompt)
    short = HFPolicy.load(tiny_model_dir, device="cpu", max_prompt_tokens=16)
    assert len(full) > 16
    (generation,) = short.generate([long_prompt], max_new_tokens=3, seed=0)
    assert generation.prompt_ids == full[-16:]
    # The end of the prompt, where the answer starts, is what survives.
    assert short.tokenizer.decode(generation.prompt_ids).endswith("<|end|>\n<|assistant|>\n")


def test_temperature_zero_is_greedy(policy: HFPolicy) -> None:
    first = policy.generate(PROMPTS, max_new_tokens=8, temperature=0.0, seed=1)
    second = policy.generate(PROMPTS, max_new_tokens=8, temperature=0.0, seed=2)
    assert _as_tuples(first) == _as_tuples(second)
    for g in first:
        ids = torch.tensor([g.prompt_ids + g.completion_ids])
        with torch.no_grad():
            logits = policy.model(input_ids=ids).logits[0]
        start = len(g.prompt_ids)
        for offset, token in enumerate(g.completion_ids):
            assert int(logits[start - 1 + offset].argmax()) == token


def test_token_logprobs_batch_equals_one_by_one_and_handles_empty(policy: HFPolicy) -> None:
    prompts = [policy.encode_prompt(p) for p in PROMPTS] + [policy.encode_prompt(PROMPTS[0])]
    completions = [[10, 11, 12, 13, 14], [20, 21], []]
    batch = policy.token_logprobs(prompts, completions)
    assert batch[0].requires_grad and batch[0].shape == (5,)
    assert batch[2].numel() == 0
    for prompt, completion, scores in zip(prompts[:2], completions[:2], batch[:2], strict=True):
        (alone,) = policy.token_logprobs([prompt], [completion])
        assert torch.allclose(alone, scores, atol=1e-5)
    reference = policy.token_logprobs(prompts, completions, reference=True)
    assert not reference[0].requires_grad
    assert torch.allclose(reference[0], batch[0].detach(), atol=1e-6)  # nothing learnt yet


def test_reference_is_frozen_and_optional(tiny_model_dir: Path) -> None:
    policy = HFPolicy.load(tiny_model_dir, device="cpu")
    assert all(not p.requires_grad for p in policy.reference.parameters())
    assert {id(p) for p in policy.reference.parameters()}.isdisjoint(id(p) for p in policy.trainable_parameters())
    bare = HFPolicy.load(tiny_model_dir, device="cpu", keep_reference=False)
    assert bare.reference is None and not bare.has_reference
    with pytest.raises(RuntimeError, match="keep_reference"):
        bare.token_logprobs([[1, 2]], [[3]], reference=True)


def test_render_uses_the_chat_template_or_a_plain_fallback(policy: HFPolicy) -> None:
    assert policy.render(PROMPTS[1]) == (
        "<|system|>\nYou write Python.<|end|>\n<|user|>\nReturn the reversed string.<|end|>\n<|assistant|>\n"
    )
    policy.tokenizer.chat_template = None
    assert policy.render(PROMPTS[1]) == "system: You write Python.\nuser: Return the reversed string.\nassistant: "


def test_load_errors_name_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match="nowhere"):
        HFPolicy.load(missing, device="cpu")
    with pytest.raises(ValueError, match=str(tmp_path)):
        HFPolicy.load(tmp_path, device="cpu")


def test_resolve_device() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            resolve_device("cuda:0")


def _trained(policy: HFPolicy) -> HFPolicy:
    generations = policy.generate(PROMPTS, max_new_tokens=8, seed=0)
    samples = [
        Sample(prompt_ids=g.prompt_ids, completion_ids=g.completion_ids, old_logprobs=g.logprobs, advantage=a)
        for g, a in zip(generations, [1.0, -1.0], strict=True)
    ]
    optimizer = make_optimizer(policy, 1e-2)
    for _ in range(2):
        grpo_update(policy, samples, optimizer, clip=0.2, kl_weight=0.0)
    return policy


@pytest.mark.parametrize("lora", [None, LoraSettings(r=4, alpha=8)], ids=["full", "lora"])
def test_save_and_load_weights_round_trip(tiny_model_dir: Path, tmp_path: Path, lora: LoraSettings | None) -> None:
    trained = _trained(HFPolicy.load(tiny_model_dir, device="cpu", lora=lora))
    trained.save(tmp_path / "ckpt")
    if lora:
        assert (tmp_path / "ckpt" / "adapter_model.safetensors").is_file()
        assert not (tmp_path / "ckpt" / "model.safetensors").exists()
    restored = HFPolicy.load(tiny_model_dir, device="cpu", lora=lora)
    prompts = [restored.encode_prompt(p) for p in PROMPTS]
    completions = [[30, 31, 32], [40, 41]]
    with torch.no_grad():
        fresh = restored.token_logprobs(prompts, completions)
        restored.load_weights(tmp_path / "ckpt")
        expected = trained.token_logprobs(prompts, completions)
        got = restored.token_logprobs(prompts, completions)
        # The reference is still the starting model, not the checkpoint.
        reference = restored.token_logprobs(prompts, completions, reference=True)
    assert not torch.equal(fresh[0], expected[0])
    for e, g, f, r in zip(expected, got, fresh, reference, strict=True):
        assert torch.equal(e, g)
        assert torch.equal(f, r)

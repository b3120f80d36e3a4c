"""A Hugging Face causal LM as a learnable policy: sample completions, score tokens, save.

The model comes from a local folder only (the trainer never downloads). With LoRA
only the adapter learns and the KL reference is the same network with the adapter
switched off; without LoRA the reference is a frozen copy taken at load time.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Nothing here may reach the network; set before transformers is imported anywhere.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.utils import logging as transformers_logging

# A progress bar for loading a few weights, on every load and checkpoint, hides the trainer's own.
transformers_logging.disable_progress_bar()

Messages = list[dict[str, str]]


def resolve_device(name: str = "auto") -> torch.device:
    """`auto` picks CUDA when present; an explicit CUDA device that is not there is an error, not a silent CPU run."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise ValueError(f"unknown device {name!r} (use auto, cpu, cuda or cuda:N)") from exc
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {name!r} asked for, but CUDA is not available on this machine")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"device {name!r} asked for, but only {torch.cuda.device_count()} CUDA device(s) exist")
    elif device.type != "cpu":
        raise ValueError(f"unsupported device {name!r} (use auto, cpu, cuda or cuda:N)")
    return device


@dataclass(frozen=True)
class LoraSettings:
    r: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: tuple[str, ...] = ("q_proj", "v_proj")


@dataclass
class Generation:
    text: str
    prompt_ids: list[int]
    completion_ids: list[int]
    # Log-probability of each completion token under the policy at temperature 1,
    # scored after sampling exactly as the update scores it, so the first ratio is 1.
    logprobs: list[float]


class HFPolicy:
    learnable = True

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        device: torch.device,
        reference: Any | None,
        lora: LoraSettings | None,
        has_reference: bool,
        max_prompt_tokens: int,
    ) -> None:
        """Use `HFPolicy.load`; this only stores what it prepared."""
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.reference = reference
        self.lora = lora
        self.has_reference = has_reference
        self.max_prompt_tokens = max_prompt_tokens

    @classmethod
    def load(
        cls,
        path: str | Path,
        *,
        device: str = "auto",
        lora: LoraSettings | None = None,
        keep_reference: bool = True,
        max_prompt_tokens: int = 1024,
    ) -> HFPolicy:
        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(f"model folder {folder} does not exist")
        if not (folder / "config.json").is_file():
            raise ValueError(f"{folder} holds no Hugging Face model (no config.json)")
        if max_prompt_tokens < 1:
            raise ValueError("max_prompt_tokens must be at least 1")
        target = resolve_device(device)
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        # Prompts are cut to max_prompt_tokens by encode_prompt (keeping their end), after
        # tokenizing them whole: the tokenizer's warning about long inputs is not for us.
        tokenizer.model_max_length = 1 << 62
        # float32 everywhere: the importance ratio compares two forward passes, and
        # half precision makes it drift from 1 on identical weights.
        model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32)
        model.to(target)
        model.eval()
        if tokenizer.pad_token_id is None:
            # Padding is always masked, so any id will do; eos is the usual stand-in.
            tokenizer.pad_token = tokenizer.eos_token
        reference = None
        if lora is not None:
            from peft import LoraConfig, get_peft_model

            config = LoraConfig(
                r=lora.r,
                lora_alpha=lora.alpha,
                lora_dropout=lora.dropout,
                target_modules=list(lora.target_modules),
                task_type="CAUSAL_LM",
            )
            model = get_peft_model(model, config)
            model.eval()
        elif keep_reference:
            reference = copy.deepcopy(model)
            reference.eval()
            reference.requires_grad_(False)
        return cls(
            model,
            tokenizer,
            device=target,
            reference=reference,
            lora=lora,
            has_reference=keep_reference,
            max_prompt_tokens=max_prompt_tokens,
        )

    # -- prompts -------------------------------------------------------------------

    def render(self, messages: Messages) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        lines = "".join(f"{message['role']}: {message['content']}\n" for message in messages)
        return lines + "assistant: "

    def encode_prompt(self, messages: Messages) -> list[int]:
        """Rendered prompt ids, keeping the last `max_prompt_tokens` (repair turns grow at the end)."""
        templated = bool(getattr(self.tokenizer, "chat_template", None))
        # A chat template writes its own start tokens; adding them again would double them.
        ids = self.tokenizer(self.render(messages), add_special_tokens=not templated)["input_ids"]
        return list(ids[-self.max_prompt_tokens :])

    def _eos_ids(self) -> set[int]:
        ids: set[int] = set()
        for value in (self.tokenizer.eos_token_id, self._base_model().generation_config.eos_token_id):
            if isinstance(value, int):
                ids.add(value)
            elif value:
                ids.update(int(v) for v in value)
        return ids

    def _base_model(self) -> Any:
        return self.model.get_base_model() if self.lora is not None else self.model

    # -- sampling ------------------------------------------------------------------

    def generate(
        self,
        prompts: list[Messages],
        *,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: int = 0,
    ) -> list[Generation]:
        """Sample one completion per prompt.

        1. Render and tokenize each prompt, left-truncated to `max_prompt_tokens`.
        2. Sample the batch with left padding, seeded, stopping at an end-of-sequence id.
        3. Cut each completion after its first end-of-sequence id (kept: stopping is learned too).
        4. Score the kept tokens with `token_logprobs`, as the update will.
        """
        if not prompts:
            return []
        if max_new_tokens < 1:
            raise ValueError("max_new_tokens must be at least 1")
        prompt_ids = [self.encode_prompt(messages) for messages in prompts]
        pad_id = self.tokenizer.pad_token_id
        width = max(len(ids) for ids in prompt_ids)
        input_ids = torch.full((len(prompt_ids), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(prompt_ids), width), dtype=torch.long)
        for row, ids in enumerate(prompt_ids):
            input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
            attention[row, width - len(ids) :] = 1
        eos_ids = self._eos_ids()
        options: dict[str, Any] = {
            "max_new_tokens": max_new_tokens,
            "pad_token_id": pad_id,
            "eos_token_id": sorted(eos_ids) or None,
            # Whatever the checkpoint's generation_config suggests, sample from the
            # policy itself: the update assumes the tokens came from its distribution.
            "top_k": 0,
            "min_p": None,
            "typical_p": 1.0,
            "repetition_penalty": 1.0,
            "no_repeat_ngram_size": 0,
        }
        if temperature > 0:
            options.update(do_sample=True, temperature=temperature, top_p=top_p)
        else:
            options.update(do_sample=False, temperature=None, top_p=None)
        self.model.eval()
        devices = [self.device] if self.device.type == "cuda" else []
        # fork_rng: seeding for this call must not reseed the caller's other random streams.
        with torch.random.fork_rng(devices=devices), torch.no_grad():
            torch.manual_seed(seed)
            output = self.model.generate(
                input_ids=input_ids.to(self.device), attention_mask=attention.to(self.device), **options
            )
        completions: list[list[int]] = []
        for row in output[:, width:].tolist():
            # Keep the stop token (what follows it is padding): stopping is an action the
            # policy took, and the update must credit or blame it like any other token.
            stop = next((i for i, token in enumerate(row) if token in eos_ids), None)
            completions.append(row if stop is None else row[: stop + 1])
        logprobs = self.token_logprobs(prompt_ids, completions)
        return [
            Generation(
                text=self.tokenizer.decode(completion, skip_special_tokens=True),
                prompt_ids=prompt,
                completion_ids=completion,
                logprobs=scores.tolist(),
            )
            for prompt, completion, scores in zip(prompt_ids, completions, logprobs, strict=True)
        ]

    def score_texts(self, prompts: list[Messages], texts: list[str], *, max_new_tokens: int) -> list[Generation]:
        """Generations for answers the policy did not sample (a known solution shown to
        it): the text's tokens (at most max_new_tokens, the last being a stop token) and
        their log-probabilities under the policy, as if it had sampled them."""
        eos = self.tokenizer.eos_token_id
        prompt_ids = [self.encode_prompt(messages) for messages in prompts]
        completions = [[*self.tokenizer(text, add_special_tokens=False)["input_ids"][: max_new_tokens - 1], eos]
                       for text in texts]  # fmt: skip
        self.model.eval()
        with torch.no_grad():
            logprobs = self.token_logprobs(prompt_ids, completions)
        rows = zip(texts, prompt_ids, completions, logprobs, strict=True)
        return [Generation(text=text, prompt_ids=prompt, completion_ids=completion, logprobs=scores.tolist())
                for text, prompt, completion, scores in rows]  # fmt: skip

    # -- scoring -------------------------------------------------------------------

    @contextmanager
    def _scoring_model(self, reference: bool) -> Iterator[Any]:
        if not reference:
            yield self.model
            return
        if not self.has_reference:
            raise RuntimeError("this policy keeps no reference model (loaded with keep_reference=False)")
        if self.lora is not None:
            with self.model.disable_adapter():
                yield self.model
        else:
            yield self.reference

    def token_logprobs(
        self, prompt_ids: list[list[int]], completion_ids: list[list[int]], *, reference: bool = False
    ) -> list[torch.Tensor]:
        """Log-probability of each completion token given its prompt, one right-padded forward pass.

        With `reference=False` the result carries grad when grad is enabled; with
        `reference=True` it comes from the reference under no_grad.
        """
        if len(prompt_ids) != len(completion_ids):
            raise ValueError("prompt_ids and completion_ids differ in length")
        results: list[torch.Tensor] = [torch.zeros(0, device=self.device) for _ in completion_ids]
        rows = [i for i, completion in enumerate(completion_ids) if completion]
        if not rows:
            return results
        if any(not prompt_ids[i] for i in rows):
            raise ValueError("a completion needs at least one prompt token to be conditioned on")
        sequences = [list(prompt_ids[i]) + list(completion_ids[i]) for i in rows]
        width = max(len(seq) for seq in sequences)
        input_ids = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for row, seq in enumerate(sequences):
            input_ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
            attention[row, : len(seq)] = 1
        input_ids = input_ids.to(self.device)
        attention = attention.to(self.device)
        with self._scoring_model(reference) as model, torch.no_grad() if reference else nullcontext():
            logits = model(input_ids=input_ids, attention_mask=attention, use_cache=False).logits
            for row, i in enumerate(rows):
                start, length = len(prompt_ids[i]), len(completion_ids[i])
                # The logit at position t predicts token t + 1.
                window = logits[row, start - 1 : start - 1 + length].float()
                targets = input_ids[row, start : start + length]
                scores = torch.log_softmax(window, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
                results[i] = scores
        return results

    # -- learning and checkpoints ---------------------------------------------------

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [param for param in self.model.parameters() if param.requires_grad]

    def save(self, out_dir: str | Path) -> Path:
        """Write the learned weights (the adapter only, with LoRA) and the tokenizer."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(out)
        self.tokenizer.save_pretrained(out)
        return out

    def load_weights(self, directory: str | Path) -> None:
        """Restore what `save` wrote into this policy; the reference stays the one loaded at start."""
        folder = Path(directory)
        if not folder.is_dir():
            raise FileNotFoundError(f"checkpoint folder {folder} does not exist")
        if self.lora is not None:
            from peft import set_peft_model_state_dict
            from safetensors.torch import load_file

            adapter = folder / "adapter_model.safetensors"
            if not adapter.is_file():
                raise ValueError(f"{folder} holds no LoRA adapter (no adapter_model.safetensors)")
            state = load_file(str(adapter), device=str(self.device))
            result = set_peft_model_state_dict(self.model, state)
            unexpected = list(getattr(result, "unexpected_keys", []) or [])
            if unexpected:
                raise ValueError(f"adapter in {folder} does not fit this model: unexpected {unexpected[:3]}")
            return
        if not (folder / "config.json").is_file():
            raise ValueError(f"{folder} holds no saved model (no config.json)")
        # from_pretrained knows sharding and tied weights; copying its tensors in keeps
        # this object (and any optimizer holding its parameters) valid.
        saved = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32)
        with torch.no_grad():
            self.model.load_state_dict(saved.state_dict(), strict=True)
        del saved

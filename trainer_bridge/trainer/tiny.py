"""A tiny, randomly initialised causal LM with its own byte-level tokenizer.

It stands in for a real model in tests and in the offline demo: it loads through
the same `AutoTokenizer` / `AutoModelForCausalLM` path as a downloaded model, so
the trainer exercises real code without network access or gigabytes of weights.
Its output is noise; only its plumbing matters.

CLI: `python -m trainer_bridge.trainer.tiny --out DIR [--text FILE ...] [--export FILE.jsonl ...]`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

# Nothing here may reach the network; set before transformers is imported anywhere.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

BOS, EOS, PAD, END = "<|bos|>", "<|eos|>", "<|pad|>", "<|end|>"
SPECIAL_TOKENS = (BOS, EOS, PAD, "<|system|>", "<|user|>", "<|assistant|>", END)

# Each message as `<|role|>\ncontent<|end|>\n`; the generation prompt opens an assistant turn.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}<|end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def texts_sha256(texts: Sequence[str]) -> str:
    """A hash over the ordered texts; length-prefixed so ["ab", "c"] and ["a", "bc"] differ."""
    digest = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def _train_tokenizer(texts: Sequence[str], vocab_size: int, context: int):  # -> transformers.PreTrainedTokenizerFast
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    # Byte-level: all 256 bytes are in the initial alphabet, so any string encodes
    # without an unknown token and decoding gives the exact text back.
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        clean_up_tokenization_spaces=False,
        model_max_length=context,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def make_tiny_model(
    texts: Iterable[str],
    out_dir: str | Path,
    *,
    vocab_size: int = 1024,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 4,
    context: int = 2048,
    seed: int = 0,
) -> Path:
    """Train a tokenizer on `texts`, build a random Llama of the given shape, save both to `out_dir`.

    Same texts and seed give byte-identical weights. The model's vocabulary is the
    tokenizer's real size, which may be below `vocab_size` when the texts are few.
    """
    texts = [text for text in texts if text]
    if not texts:
        raise ValueError("no training text for the tokenizer")
    if hidden_size % heads:
        raise ValueError(f"hidden_size {hidden_size} is not divisible by heads {heads}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # one shard of a tiny model needs no progress bar

    tokenizer = _train_tokenizer(texts, vocab_size, context)
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS}
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=4 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=context,
        bos_token_id=ids[BOS],
        eos_token_id=ids[EOS],
        pad_token_id=ids[PAD],
        tie_word_embeddings=True,  # halves the parameters; nothing here depends on untied heads
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    # `<|end|>` closes a turn in the chat template, so it also ends a sampled answer.
    model.generation_config = GenerationConfig(
        bos_token_id=ids[BOS],
        eos_token_id=[ids[EOS], ids[END]],
        pad_token_id=ids[PAD],
    )
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    meta = {
        "vocab_size": vocab_size,
        "actual_vocab_size": len(tokenizer),
        "hidden_size": hidden_size,
        "layers": layers,
        "heads": heads,
        "context": context,
        "seed": seed,
        "texts": len(texts),
        "texts_sha256": texts_sha256(texts),
    }
    (out / "tiny.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return out


class InputError(Exception):
    """Bad CLI input; the message names the file (and line)."""


def _export_texts(path: Path) -> Iterator[str]:
    """The prompt messages' contents and the visible tests of each exported task."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: not JSON: {exc.msg}") from exc
        try:
            messages = record["prompt"]
            tests = record.get("tests") or {}
            contents = [str(message["content"]) for message in messages]
            visible = [str(test) for test in tests.get("visible") or []]
        except (AttributeError, KeyError, TypeError) as exc:
            raise InputError(f"{path}:{number}: not an exported task (needs prompt messages and tests)") from exc
        yield from contents
        yield from visible


def _read_inputs(text_files: Sequence[str], export_files: Sequence[str]) -> list[str]:
    texts: list[str] = []
    for name in text_files:
        try:
            texts.append(Path(name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{name}: cannot read: {exc}") from exc
    for name in export_files:
        texts.extend(_export_texts(Path(name)))
    texts = [text for text in texts if text.strip()]
    if not texts:
        names = ", ".join([*text_files, *export_files]) or "(no --text or --export given)"
        raise InputError(f"no training text in {names}")
    return texts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainer_bridge.trainer.tiny", description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="directory to write the model and tokenizer into")
    parser.add_argument("--text", action="append", default=[], metavar="FILE", help="a plain text file")
    parser.add_argument("--export", action="append", default=[], metavar="FILE", help="a snapshot export (JSONL)")
    parser.add_argument("--vocab-size", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    # Inputs are checked before torch is imported, so a typo fails in well under a second.
    try:
        texts = _read_inputs(args.text, args.export)
    except InputError as exc:
        print(f"tiny: error: {exc}", file=sys.stderr)
        return 2
    out = make_tiny_model(texts, args.out, vocab_size=args.vocab_size, seed=args.seed)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The tiny model: reproducible bytes, loadable offline like any checkpoint, the
chat template as documented, and a CLI that rejects bad input with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.trainer_bridge.trainer.conftest import TEXTS, TINY_SHAPE
from trainer_bridge.trainer import tiny
from trainer_bridge.trainer.tiny import make_tiny_model, texts_sha256


def test_same_texts_and_seed_give_identical_weights(tiny_model_dir: Path, tmp_path: Path) -> None:
    again = make_tiny_model(TEXTS, tmp_path / "again", **TINY_SHAPE)
    other_seed = make_tiny_model(TEXTS, tmp_path / "other", **{**TINY_SHAPE, "seed": 1})
    weights = (tiny_model_dir / "model.safetensors").read_bytes()
    assert (again / "model.safetensors").read_bytes() == weights
    assert (other_seed / "model.safetensors").read_bytes() != weights
    assert (again / "tokenizer.json").read_bytes() == (tiny_model_dir / "tokenizer.json").read_bytes()
    meta = json.loads((tiny_model_dir / "tiny.json").read_text())
    assert meta["texts_sha256"] == texts_sha256(TEXTS)
    assert meta["seed"] == 0 and meta["hidden_size"] == 32 and meta["vocab_size"] == 400


def test_loads_offline_as_an_ordinary_checkpoint(tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, local_files_only=True)
    assert model.config.vocab_size == len(tokenizer) <= 400
    assert model.config.hidden_size == 32 and model.config.num_hidden_layers == 2
    assert (tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token) == ("<|bos|>", "<|eos|>", "<|pad|>")
    assert model.config.eos_token_id == tokenizer.eos_token_id
    assert model.config.pad_token_id == tokenizer.pad_token_id


def test_every_string_round_trips(tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir, local_files_only=True)
    for text in ["déjà vu ✓ 世界", "\ttabs  and   spaces \n\n", "print('never seen: 🦀')", "  leading"]:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.unk_token_id is None or tokenizer.unk_token_id not in ids
        assert tokenizer.decode(ids, skip_special_tokens=True) == text
    ids = tokenizer("<|assistant|>\nx = 1<|end|>", add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == "\nx = 1"


def test_chat_template(tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir, local_files_only=True)
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Add 2 and 3."},
        {"role": "assistant", "content": "5"},
    ]
    rendered = "<|system|>\nBe brief.<|end|>\n<|user|>\nAdd 2 and 3.<|end|>\n<|assistant|>\n5<|end|>\n"
    assert tokenizer.apply_chat_template(messages, tokenize=False) == rendered
    with_prompt = tokenizer.apply_chat_template(messages[:2], tokenize=False, add_generation_prompt=True)
    assert with_prompt == "<|system|>\nBe brief.<|end|>\n<|user|>\nAdd 2 and 3.<|end|>\n<|assistant|>\n"
    ids = tokenizer(with_prompt, add_special_tokens=False)["input_ids"]
    assert ids[0] == tokenizer.convert_tokens_to_ids("<|system|>")
    assert ids[-2:] == [tokenizer.convert_tokens_to_ids("<|assistant|>"), *tokenizer.encode("\n")]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainer_bridge.trainer.tiny", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_rejects_bad_input_with_exit_2(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    missing = _cli("--out", out, "--text", str(tmp_path / "absent.txt"))
    assert missing.returncode == 2
    assert "absent.txt" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1

    broken = tmp_path / "export.jsonl"
    task = {"prompt": [{"role": "user", "content": "hi"}], "tests": {"setup": "", "visible": ["x"], "hidden": None}}
    broken.write_text(json.dumps(task) + "\n\n{not json\n")
    result = _cli("--out", out, "--export", str(broken))
    assert result.returncode == 2
    assert f"{broken}:3:" in result.stderr and len(result.stderr.strip().splitlines()) == 1

    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    result = _cli("--out", out, "--text", str(empty))
    assert result.returncode == 2 and "empty.txt" in result.stderr
    assert _cli("--out", out).returncode == 2
    assert not Path(out).exists()


def test_cli_trains_on_an_export(tmp_path: Path, capsys) -> None:
    export = tmp_path / "export.jsonl"
    tasks = [
        {
            "prompt": [{"role": "system", "content": "You write Python."}, {"role": "user", "content": text}],
            "tests": {"setup": "", "visible": [f"assert solve({i}) == {i}"], "hidden": None},
        }
        for i, text in enumerate(TEXTS)
    ]
    export.write_text("".join(json.dumps(task) + "\n" for task in tasks))
    # In process: a subprocess would spend seconds importing torch again.
    assert tiny.main(["--out", str(tmp_path / "model"), "--export", str(export), "--vocab-size", "300"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "model")
    meta = json.loads((tmp_path / "model" / "tiny.json").read_text())
    expected = []
    for task in tasks:
        expected += [m["content"] for m in task["prompt"]] + task["tests"]["visible"]
    assert meta["texts_sha256"] == texts_sha256(expected)
    assert AutoTokenizer.from_pretrained(tmp_path / "model", local_files_only=True).chat_template

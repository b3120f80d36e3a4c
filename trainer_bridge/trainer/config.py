"""The trainer's configuration: defaults, then a file (TOML or JSON, `--config`),
then flags; a later source wins. Every value is checked before anything starts,
and an error names the setting and where it came from."""

from __future__ import annotations

import argparse
import json
import math
import os
import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

POLICIES = ("model", "replay")
REPLAY_KINDS = ("reference", "adversarial", "killed", "survived")  # killed/survived: mutants of the reference


class ConfigError(ValueError):
    """A setting is wrong; the message names it and its source."""


@dataclass(frozen=True)
class TrainConfig:
    # -- the platform
    server: str = "http://127.0.0.1:8000"
    token: str = ""  # a user token (registers a job) or, with `job`, that job's token
    job: int | None = None  # continue an existing job instead of registering one
    job_name: str = ""
    snapshot: str = ""  # the snapshot's hash (a job's own snapshot when `job` is given)
    reward_mode: str = "binary"  # or "fraction"
    # -- the policy
    policy: str = "model"  # "model": a local Hugging Face model; "replay": the tasks' known solutions
    model: str = ""  # a local folder (no download at run time)
    device: str = "auto"
    lora: bool = False
    lora_r: int = 8
    lora_alpha: int = 16
    replay_mix: dict[str, float] = field(default_factory=lambda: {"reference": 1.0})
    guide_share: float = 0.0  # model policy: this share of episodes answered with known solutions (replay_mix)
    max_new_tokens: int = 256
    generation_batch: int = 8  # completions sampled together; each chunk is scored while the next is sampled
    max_prompt_tokens: int = 1024
    temperature: float = 1.0
    top_p: float = 1.0
    # -- the loop
    train_steps: int = 10  # optimizer steps (each: a batch of tasks, a group of episodes each)
    batch_size: int = 4  # tasks a step
    group_size: int = 4  # G: episodes a task
    max_steps: int = 1  # turns an episode: the first attempt and up to max_steps - 1 repairs
    turn_discount: float = 1.0  # an episode earns its final reward x turn_discount^(turns - 1)
    resample_rounds: int = 2  # groups whose rewards are all equal are dropped and resampled this often
    curriculum: bool = False  # tasks in order of difficulty band (too easy, learnable, too hard, unknown)
    # -- the update
    learning_rate: float = 1e-5
    clip: float = 0.2
    kl_weight: float = 0.0
    micro_batch: int = 8
    max_grad_norm: float = 1.0
    # -- rewards
    concurrent_rewards: bool = True  # one scoring call a turn for every episode, or one completion at a time
    reward_batch: int = 16
    reward_concurrency: int = 8
    reward_deadline_s: float = 120.0
    # -- bookkeeping
    seed: int = 0
    output: str = "runs/train"
    checkpoint_every: int = 1
    resume: bool = False
    post_metrics: bool = True

    def public(self) -> dict[str, Any]:
        """What is recorded with the job and the run (never the token)."""
        return {k: v for k, v in asdict(self).items() if k != "token"}


_POSITIVE = ("generation_batch", "train_steps", "batch_size", "max_steps", "max_new_tokens", "micro_batch",
             "reward_batch", "reward_concurrency", "checkpoint_every", "lora_r", "lora_alpha",
             "max_prompt_tokens")  # fmt: skip
_INTS = {*_POSITIVE, "job", "group_size", "resample_rounds", "seed"}
_FLOATS = {"guide_share", "temperature", "top_p", "turn_discount", "learning_rate", "clip", "kl_weight",
           "max_grad_norm", "reward_deadline_s"}  # fmt: skip
_BOOLS = {"lora", "curriculum", "concurrent_rewards", "resume", "post_metrics"}
_NAMES = {f.name for f in fields(TrainConfig)}
_KINDS = {**dict.fromkeys(_INTS, "a whole number"), **dict.fromkeys(_FLOATS, "a number"),
          **dict.fromkeys(_BOOLS, "true or false"), "replay_mix": "KIND=WEIGHT pairs"}  # fmt: skip


def parse_args(argv: list[str] | None = None) -> TrainConfig:
    """The configuration from `argv` (flags, and the file `--config` names)."""
    parser = argparse.ArgumentParser(prog="python -m trainer_bridge.train", description=__doc__)
    parser.add_argument("--config", help="a TOML or JSON file of settings (flags win over it)")
    for f in fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.name in _BOOLS:
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None)
        elif f.name == "replay_mix":
            parser.add_argument(flag, dest=f.name, default=None, metavar="KIND=WEIGHT,...",
                                help=f"kinds: {', '.join(REPLAY_KINDS)}")  # fmt: skip
        else:
            parser.add_argument(flag, dest=f.name, default=None)
    args = vars(parser.parse_args(argv))
    config_file = args.pop("config")
    # defaults < the environment (as the client reads it) < the file < flags
    values: dict[str, Any] = {name: os.environ[env] for name, env in (("server", "PLATFORM_URL"),
                              ("token", "PLATFORM_TOKEN")) if os.environ.get(env)}  # fmt: skip
    if config_file:
        values.update(_coerce_all(read_file(Path(config_file)), source=config_file))
    flags = {k: v for k, v in args.items() if v is not None}
    values.update(_coerce_all(flags, source="flag"))
    return checked(replace(TrainConfig(), **values))


def read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror}).") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a table (object) of settings, got {type(data).__name__}.")
    unknown = sorted(set(data) - _NAMES)
    if unknown:
        raise ConfigError(f"{path}: unknown settings {', '.join(unknown)}.")
    return data


def _coerce_all(values: dict[str, Any], *, source: str) -> dict[str, Any]:
    return {name: _coerce(name, value, source) for name, value in values.items()}


def _coerce(name: str, value: Any, source: str) -> Any:
    where = f"--{name.replace('_', '-')}" if source == "flag" else f"{source}: {name}"
    try:
        if name in _INTS:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if name in _FLOATS:
            if isinstance(value, bool):
                raise ValueError
            number = float(value)
            if not math.isfinite(number):
                raise ValueError
            return number
        if name in _BOOLS:
            if not isinstance(value, bool):
                raise ValueError
            return value
        if name == "replay_mix":
            return _mix(value)
        if not isinstance(value, str):
            raise ValueError
        return value
    except (TypeError, ValueError) as exc:
        kind = _KINDS.get(name, "text")
        raise ConfigError(f"{where}: {kind} expected, got {value!r}.") from exc


def _mix(value: Any) -> dict[str, float]:
    if isinstance(value, str):
        pairs = [part.split("=", 1) for part in value.split(",") if part.strip()]
        if any(len(p) != 2 for p in pairs):
            raise ValueError
        value = {k.strip(): float(v) for k, v in pairs}
    if not isinstance(value, dict):
        raise ValueError
    return {str(k): float(v) for k, v in value.items()}


def checked(config: TrainConfig) -> TrainConfig:
    """`config`, if every setting makes sense together; else ConfigError naming them."""
    errors = []

    def need(ok: bool, name: str, why: str) -> None:
        if not ok:
            errors.append(f"{name}: {why}")

    need(config.server.startswith(("http://", "https://")), "server", "an http(s) URL")
    need(bool(config.token), "token", "an API token (--token or PLATFORM_TOKEN)")
    need(config.job is not None or len(config.snapshot) == 64, "snapshot",
         "the snapshot's 64-character hash (or name an existing job)")  # fmt: skip
    need(config.reward_mode in ("binary", "fraction"), "reward_mode", "binary or fraction")
    need(config.policy in POLICIES, "policy", f"one of {', '.join(POLICIES)}")
    if config.policy == "model":
        need(bool(config.model), "model", "a local model folder (the model policy needs one)")
        # Checked before a job is registered for a run that could not start.
        need(not config.model or (Path(config.model) / "config.json").is_file(), "model",
             f"no Hugging Face model in {config.model!r} (no config.json there)")  # fmt: skip
    mix = config.replay_mix
    need(bool(mix) and set(mix) <= set(REPLAY_KINDS) and all(w >= 0 and math.isfinite(w) for w in mix.values())
         and sum(mix.values()) > 0, "replay_mix",
         f"weights (>= 0, not all 0) for kinds among {', '.join(REPLAY_KINDS)}")  # fmt: skip
    for name in _POSITIVE:
        need(getattr(config, name) >= 1, name, "at least 1")
    need(config.group_size >= 2, "group_size", "at least 2 (advantages compare episodes within a group)")
    need(config.resample_rounds >= 0, "resample_rounds", "0 or more")
    need(0 < config.turn_discount <= 1, "turn_discount", "more than 0, at most 1")
    need(config.temperature >= 0, "temperature", "0 (greedy) or more")
    need(0 < config.top_p <= 1, "top_p", "more than 0, at most 1")
    need(config.learning_rate > 0, "learning_rate", "more than 0")
    need(0 < config.clip < 1, "clip", "between 0 and 1")
    need(config.kl_weight >= 0, "kl_weight", "0 or more")
    need(0 <= config.guide_share < 1, "guide_share", "from 0 to less than 1 (the model answers the rest)")
    need(config.guide_share == 0 or config.policy == "model", "guide_share", "guides the model policy only")
    need(config.max_grad_norm > 0, "max_grad_norm", "more than 0")
    need(config.reward_deadline_s > 0, "reward_deadline_s", "more than 0")
    need(0 <= config.seed < 2**31, "seed", "from 0 to 2^31-1")
    need(bool(config.output), "output", "a folder for checkpoints and metrics")
    if errors:
        raise ConfigError("bad configuration: " + "; ".join(errors))
    return config

"""The trainer's configuration: defaults, then a file (TOML or JSON, `--config`),
then flags; a later source wins. Every value is checked before anything starts,
and every bad one is reported at once, each named with where it came from.

`TrainConfig` is a pydantic model: each field's type and bounds are declared on
it, and a field's `description` is what an error says the value must be."""

from __future__ import annotations

import argparse
import json
import math
import os
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

POLICIES = ("model", "replay")
REPLAY_KINDS = ("reference", "adversarial", "killed", "survived")  # killed/survived: mutants of the reference
ENVIRONMENT = {"server": "PLATFORM_URL", "token": "PLATFORM_TOKEN"}  # as the client reads them


class ConfigError(ValueError):
    """Settings are wrong; the message names each, with its source (`problems` lists them)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [message]


# The value rules the hand-written parser had, kept so that exactly the same values are
# accepted: no true/false for a number, and text read as int() and float() read it
# (pydantic alone would take true as 1 and "6.0" as 6).
def _whole(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        raise ValueError("not a whole number")
    return int(value) if isinstance(value, str) else value


def _number(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("not a number")
    return float(value) if isinstance(value, str) else value


def _text(value: Any) -> Any:
    if not isinstance(value, str):  # a choice among words: 3 is text of the wrong kind, not a wrong word
        raise ValueError("not text")
    return value


def _pairs(value: Any) -> Any:
    """`KIND=WEIGHT,...` (as a flag gives it) to a table; a table as it is."""
    if isinstance(value, str):
        pairs = [part.split("=", 1) for part in value.split(",") if part.strip()]
        if any(len(p) != 2 for p in pairs):
            raise ValueError("not KIND=WEIGHT pairs")
        return {k.strip(): v for k, v in pairs}
    return value


def _must(ok: Any, value: Any) -> Any:
    if not ok:
        raise PydanticCustomError("invalid", "invalid")  # worded from the field's description
    return value


def _url(value: str) -> str:
    return _must(value.startswith(("http://", "https://")), value)


def _mix(value: dict[str, float]) -> dict[str, float]:
    fine = set(value) <= set(REPLAY_KINDS) and all(w >= 0 and math.isfinite(w) for w in value.values())
    return _must(value and fine and sum(value.values()) > 0, value)


def _at_least(low: int, why: str = "") -> Any:
    return Field(ge=low, description=f"at least {low}{why}")


Whole = Annotated[int, BeforeValidator(_whole)]
Number = Annotated[float, BeforeValidator(_number), Field(allow_inf_nan=False)]
Text = Annotated[str, Field(strict=True)]
Switch = Annotated[bool, Field(strict=True)]  # true or false, not 1 or "yes"


class TrainConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # -- the platform
    server: Annotated[Text, AfterValidator(_url), Field(description="an http(s) URL")] = "http://127.0.0.1:8000"
    token: Text = ""  # a user token (registers a job) or, with `job`, that job's token
    job: Annotated[int | None, BeforeValidator(_whole)] = None  # continue an existing job instead of registering one
    job_name: Text = ""
    snapshot: Text = ""  # the snapshot's hash (a job's own snapshot when `job` is given)
    reward_mode: Annotated[
        Literal["binary", "fraction"], BeforeValidator(_text), Field(description="binary or fraction")
    ] = "binary"
    # -- the policy
    # "model": a local Hugging Face model; "replay": the tasks' known solutions
    policy: Annotated[
        Literal["model", "replay"], BeforeValidator(_text), Field(description=f"one of {', '.join(POLICIES)}")
    ] = "model"
    model: Text = ""  # a local folder (no download at run time)
    device: Text = "auto"
    lora: Switch = False
    lora_r: Annotated[Whole, _at_least(1)] = 8
    lora_alpha: Annotated[Whole, _at_least(1)] = 16
    replay_mix: Annotated[
        dict[str, float],
        BeforeValidator(_pairs),
        AfterValidator(_mix),
        Field(description=f"weights (>= 0, not all 0) for kinds among {', '.join(REPLAY_KINDS)}"),
    ] = Field(default_factory=lambda: {"reference": 1.0})
    # model policy: this share of episodes answered with known solutions (replay_mix)
    guide_share: Annotated[
        Number, Field(ge=0, lt=1, description="from 0 to less than 1 (the model answers the rest)")
    ] = 0.0
    max_new_tokens: Annotated[Whole, _at_least(1)] = 256
    generation_batch: Annotated[Whole, _at_least(1)] = 8  # sampled together; each chunk scored while the next samples
    max_prompt_tokens: Annotated[Whole, _at_least(1)] = 1024
    temperature: Annotated[Number, Field(ge=0, description="0 (greedy) or more")] = 1.0
    top_p: Annotated[Number, Field(gt=0, le=1, description="more than 0, at most 1")] = 1.0
    # -- the loop
    # optimizer steps (each: a batch of tasks, a group of episodes each)
    train_steps: Annotated[Whole, _at_least(1)] = 10
    batch_size: Annotated[Whole, _at_least(1)] = 4  # tasks a step
    # G: episodes a task
    group_size: Annotated[Whole, _at_least(2, " (advantages compare episodes within a group)")] = 4
    max_steps: Annotated[Whole, _at_least(1)] = 1  # turns an episode: the first attempt and up to max_steps - 1 repairs
    # repository tasks: tool calls an agentic episode (then it is submitted as it stands), the
    # characters of an observation the policy reads back, and a step's time limit
    agent_steps: Annotated[Whole, _at_least(1)] = 8
    observation_chars: Annotated[Whole, _at_least(200)] = 4000
    step_timeout_s: Annotated[Number, Field(gt=0, le=600, description="more than 0, at most 600")] = 60.0
    # an episode earns its final reward x turn_discount^(turns - 1)
    turn_discount: Annotated[Number, Field(gt=0, le=1, description="more than 0, at most 1")] = 1.0
    # groups whose rewards are all equal are dropped and resampled this often
    resample_rounds: Annotated[Whole, Field(ge=0, description="0 or more")] = 2
    curriculum: Switch = False  # tasks in order of difficulty band (too easy, learnable, too hard, unknown)
    # -- the update
    learning_rate: Annotated[Number, Field(gt=0, description="more than 0")] = 1e-5
    clip: Annotated[Number, Field(gt=0, lt=1, description="between 0 and 1")] = 0.2
    kl_weight: Annotated[Number, Field(ge=0, description="0 or more")] = 0.0
    micro_batch: Annotated[Whole, _at_least(1)] = 8
    max_grad_norm: Annotated[Number, Field(gt=0, description="more than 0")] = 1.0
    # -- rewards
    concurrent_rewards: Switch = True  # one scoring call a turn for every episode, or one completion at a time
    reward_batch: Annotated[Whole, _at_least(1)] = 16
    reward_concurrency: Annotated[Whole, _at_least(1)] = 8
    reward_deadline_s: Annotated[Number, Field(gt=0, description="more than 0")] = 120.0
    # -- bookkeeping
    seed: Annotated[Whole, Field(ge=0, lt=2**31, description="from 0 to 2^31-1")] = 0
    output: Annotated[Text, Field(min_length=1, description="a folder for checkpoints and metrics")] = "runs/train"
    checkpoint_every: Annotated[Whole, _at_least(1)] = 1
    resume: Switch = False
    post_metrics: Switch = True

    def public(self) -> dict[str, Any]:
        """What is recorded with the job and the run (never the token)."""
        return self.model_dump(exclude={"token"})


_KINDS = {int: "a whole number", int | None: "a whole number", float: "a number", bool: "true or false"}
_RULE_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "literal_error", "too_short",
                "invalid"}  # fmt: skip


def parse_args(argv: list[str] | None = None) -> TrainConfig:
    """The configuration from `argv` (flags, and the file `--config` names)."""
    parser = argparse.ArgumentParser(prog="python -m trainer_bridge.train", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="a TOML or JSON file of settings (flags win over it)")
    for name, info in TrainConfig.model_fields.items():
        flag = "--" + name.replace("_", "-")
        if info.annotation is bool:
            parser.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None)
        elif name == "replay_mix":
            parser.add_argument(flag, dest=name, default=None, metavar="KIND=WEIGHT,...",
                                help=f"kinds: {', '.join(REPLAY_KINDS)}")  # fmt: skip
        else:
            parser.add_argument(flag, dest=name, default=None)
    args = vars(parser.parse_args(argv))
    config_file = args.pop("config")
    # defaults < the environment (as the client reads it) < the file < flags; `origins`
    # remembers which source gave each value, for the error that names it.
    layers: list[tuple[dict[str, Any], Callable[[str], str]]] = [
        ({n: os.environ[env] for n, env in ENVIRONMENT.items() if os.environ.get(env)}, ENVIRONMENT.__getitem__),
        (_load(Path(config_file)) if config_file else {}, lambda name: str(config_file)),
        ({k: v for k, v in args.items() if v is not None}, lambda name: "--" + name.replace("_", "-")),
    ]
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    shadowed: list[tuple[str, Any, str]] = []
    for layer, origin in layers:
        for name, value in layer.items():
            if name in values:
                shadowed.append((name, values[name], origins[name]))
            values[name], origins[name] = value, origin(name)
    return validated(values, origins, shadowed=shadowed)


def validated(
    values: dict[str, Any], origins: dict[str, str] | None = None, *, shadowed: Iterable[tuple[str, Any, str]] = ()
) -> TrainConfig:
    """The configuration from `values`, if every setting is right and they make sense
    together; else ConfigError listing every problem, each named by `origins` (a flag,
    or the file or variable it came from).

    `shadowed` holds (name, value, origin) of values a later source replaced: a value of
    the wrong kind there is still a problem (a broken file is reported even when a flag
    wins over the line), a value out of bounds is not (the flag fixes it)."""
    origins = origins or {}
    problems: list[str] = []
    for name, value, origin in shadowed:
        try:
            TrainConfig.model_validate({name: value})
        except ValidationError as exc:
            wrong_kind = [e for e in exc.errors() if e["type"] not in _RULE_ERRORS]
            problems += _described(wrong_kind, {name: origin})
    bad: set[str] = set()
    try:
        config = TrainConfig.model_validate(values)
    except ValidationError as exc:
        errors = exc.errors()
        bad = {str(e["loc"][0]) for e in errors if e["loc"]}
        problems += _described(errors, origins)
        # What is right is still checked together, so one run shows every problem.
        config = TrainConfig.model_validate({k: v for k, v in values.items() if k not in bad})
    for names, problem in _together(config):
        if not bad & set(names):
            problems.append(f"{_where(names[0], origins)}: {problem}")
    if problems:
        head = "bad configuration" + (f", {len(problems)} problems:\n  " if len(problems) > 1 else ": ")
        raise ConfigError(head + "\n  ".join(problems), problems)
    return config


def _together(config: TrainConfig) -> list[tuple[tuple[str, ...], str]]:
    """What a run needs beyond each value being right: (the settings concerned, why)."""
    needs: list[tuple[tuple[str, ...], str]] = []
    if not config.token:
        needs.append((("token",), "an API token (--token or PLATFORM_TOKEN)"))
    if config.job is None and len(config.snapshot) != 64:
        needs.append((("snapshot", "job"), "the snapshot's 64-character hash (or name an existing job)"))
    if config.policy == "model":
        if not config.model:
            needs.append((("model", "policy"), "a local model folder (the model policy needs one)"))
        # Checked before a job is registered for a run that could not start.
        elif not (Path(config.model) / "config.json").is_file():
            needs.append((("model",), f"no Hugging Face model in {config.model!r} (no config.json there)"))
    if config.guide_share != 0 and config.policy != "model":
        needs.append((("guide_share", "policy"), "guides the model policy only"))
    return needs


def _described(errors: list[Any], origins: dict[str, str]) -> list[str]:
    """pydantic's errors as lines that name the setting, its source and what it must be."""
    lines, unknown = [], {}
    for error in errors:
        name, *inner = (str(part) for part in error["loc"])
        if error["type"] == "extra_forbidden":  # one line a source for settings that do not exist
            unknown.setdefault(origins.get(name, ""), []).append(name)
            continue
        info = TrainConfig.model_fields[name]
        if error["type"] in _RULE_ERRORS and not inner:
            must = info.description
        else:
            must = f"{'a number' if inner else _KINDS.get(info.annotation, 'text')} expected"
            if name == "replay_mix" and not inner:
                must = "KIND=WEIGHT pairs expected"
        where = _where(name, origins) + "".join(f".{part}" for part in inner)
        lines.append(f"{where}: {must}, got {error['input']!r}")
    for origin, names in unknown.items():
        lines.insert(0, f"{origin + ': ' if origin else ''}unknown settings {', '.join(sorted(names))}")
    return lines


def _where(name: str, origins: dict[str, str]) -> str:
    origin = origins.get(name)
    if origin is None:
        return name  # a default
    return origin if origin.startswith("--") else f"{origin}: {name}"


def read_file(path: Path) -> dict[str, Any]:
    """The settings in a TOML or JSON file; ConfigError if it cannot be read or names
    a setting that does not exist."""
    data = _load(path)
    unknown = sorted(set(data) - set(TrainConfig.model_fields))
    if unknown:
        raise ConfigError(f"{path}: unknown settings {', '.join(unknown)}.")
    return data


def _load(path: Path) -> dict[str, Any]:
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
    return data

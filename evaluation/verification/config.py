"""What a verification runs, and the hash that names it."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings

from evaluation.sandbox.harness_files import harness_version

VERIFICATION_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=4)
def _source_version(name: str) -> str:
    """SHA-256 of one of our modules or packages (every file in it, by relative path):
    a new mutation engine or probe library is a new configuration, so its
    verifications are run afresh, never mixed."""
    module = VERIFICATION_DIR / f"{name}.py"
    digest = hashlib.sha256()
    if module.is_file():
        digest.update(module.read_bytes())
        return digest.hexdigest()
    package = VERIFICATION_DIR / name
    files = sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    if not files:
        raise FileNotFoundError(f"{package} is neither a module nor a package of evaluation.verification")
    for path in files:
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class VerifyConfig:
    """Everything that changes which executions a verification runs, or how."""

    repeats: int = 5
    mutants: int = 30
    mutation_seed: int = 0
    probes: bool = True
    backend: str = ""
    # Input generation (generated/): candidate inputs a task, its seed, and how many hidden
    # tests an all-visible suite is offered. 0 inputs: no generation.
    inputs: int = 200
    input_seed: int = 0
    proposals: int = 10

    @classmethod
    def from_settings(cls, **overrides: Any) -> VerifyConfig:
        configured = getattr(settings, "VERIFICATION", {})
        values = {
            "repeats": int(configured.get("REPEATS", 5)),
            "mutants": int(configured.get("MUTANTS", 30)),
            "mutation_seed": int(configured.get("MUTATION_SEED", 0)),
            "probes": bool(configured.get("PROBES", True)),
            "inputs": int(configured.get("INPUTS", 200)),
            "input_seed": int(configured.get("INPUT_SEED", 0)),
            "proposals": int(configured.get("PROPOSALS", 10)),
            "backend": os.environ.get("SANDBOX_BACKEND", "bwrap"),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        config = cls(**values)
        config.validate()
        return config

    def validate(self) -> None:
        if not 1 <= self.repeats <= 50:
            raise ValueError(f"repeats must be between 1 and 50, not {self.repeats}")
        if not 0 <= self.mutants <= 500:
            raise ValueError(f"mutants must be between 0 and 500, not {self.mutants}")
        if not 0 <= self.inputs <= 5000:
            raise ValueError(f"inputs must be between 0 and 5000, not {self.inputs}")
        if not 0 <= self.proposals <= 100:
            raise ValueError(f"proposals must be between 0 and 100, not {self.proposals}")
        if self.backend not in ("bwrap", "docker"):
            raise ValueError(f"backend must be bwrap or docker, not {self.backend!r}")

    def canonical(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "harness": harness_version(),
            "mutation_engine": _source_version("mutants"),
            "probe_library": _source_version("probes"),
            "input_generation": _source_version("generated"),
        }

    def hash(self) -> str:
        return hashlib.sha256(json.dumps(self.canonical(), sort_keys=True).encode()).hexdigest()


def execution_key(*, version_hash: str, solution_digest: str, repeat: int, config_hash: str) -> str:
    """The identity of one execution: a redelivered message finds its row by it."""
    return hashlib.sha256(f"{version_hash}|{solution_digest}|{repeat}|{config_hash}".encode()).hexdigest()


def code_digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()

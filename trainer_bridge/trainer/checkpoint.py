"""Checkpoints: the policy's weights, the optimizer, where the task sampler stands,
and the step, written to a new folder and renamed into place (a crash mid-write
leaves the previous checkpoint whole). The two newest are kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

KEEP = 2
PREFIX = "checkpoint-"


def save(out_dir: Path, step: int, *, state: dict[str, Any], model: Any = None, optimizer: Any = None) -> Path:
    final = out_dir / f"{PREFIX}{step:06d}"
    partial = out_dir / f".{PREFIX}{step:06d}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    if model is not None:
        model.save(partial / "policy")
    if optimizer is not None:
        import torch

        torch.save(optimizer.state_dict(), partial / "optimizer.pt")
    (partial / "trainer.json").write_text(json.dumps({"step": step, **state}, indent=2, sort_keys=True))
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    for old in sorted(out_dir.glob(f"{PREFIX}*"))[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest(out_dir: Path) -> Path | None:
    found = sorted(p for p in out_dir.glob(f"{PREFIX}*") if (p / "trainer.json").exists())
    return found[-1] if found else None


def load(path: Path, *, model: Any = None, optimizer: Any = None) -> dict[str, Any]:
    """The trainer state saved at `path`, with the weights and optimizer restored."""
    state = json.loads((path / "trainer.json").read_text())
    if model is not None:
        model.load_weights(path / "policy")
    if optimizer is not None:
        import torch

        optimizer.load_state_dict(torch.load(path / "optimizer.pt", weights_only=True))
    return state

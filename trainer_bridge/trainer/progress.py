"""Per-step metrics: appended to metrics.jsonl, drawn as a progress line on the
terminal, and posted to the job (its page draws the curves)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

BAR_WIDTH = 20


class StepLog:
    """Rows of a JSON Lines file, each tagged with the step that wrote it (metrics, rollouts)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, step: int, values: dict[str, float]) -> None:
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"step": step, **values}, sort_keys=True) + "\n")

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def keep_first(self, steps: int) -> None:
        """Forget rows of steps from `steps` on (0-based: a resumed run does them again)."""
        kept = [row for row in self.read() if row["step"] < steps]
        self.path.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in kept), encoding="utf-8")


class ProgressBar:
    """One line a step: on a terminal it redraws in place, elsewhere it is a log line."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total, self.stream, self.started = total, stream or sys.stderr, time.monotonic()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def show(self, step: int, values: dict[str, float]) -> None:
        done = int(BAR_WIDTH * step / max(1, self.total))
        elapsed = time.monotonic() - self.started
        parts = [f"step {step}/{self.total} [{'#' * done}{'.' * (BAR_WIDTH - done)}]",
                 f"reward {values.get('reward_mean', 0):.3f}±{values.get('reward_std', 0):.3f}",
                 f"pass {values.get('pass_rate', 0):.2f}", f"turns {values.get('turns_mean', 0):.2f}",
                 f"dropped {int(values.get('dropped_groups', 0))}"]  # fmt: skip
        if "loss" in values:
            parts += [f"loss {values['loss']:.4f}", f"kl {values.get('kl', 0):.4f}"]
        if "tokens_per_s" in values:
            parts.append(f"tok/s {values['tokens_per_s']:.0f}")
        parts.append(f"reward wait {100 * values.get('reward_wait_fraction', 0):.0f}%  {elapsed:.0f}s")
        line = "  ".join(parts)
        end = "\n" if not self.tty or step >= self.total else ""
        self.stream.write(("\r" + line if self.tty else line) + end)
        self.stream.flush()

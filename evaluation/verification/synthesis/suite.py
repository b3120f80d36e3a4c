"""Running a project's test suite in a session sandbox, the engine agent episodes use.

The tree becomes a prepared environment once (EnvironmentCache), and one session
sandbox is started on it. Each run is then a step in that sandbox: the changed
file is written by the supervisor, the suite runs as one forked command, and the
file is put back from the read-only base. A mutant costs one pytest process,
not a container or a fresh sandbox; a run whose suite wrote to the tree gets a
fresh sandbox, so the next run starts from the base again.

Outcomes come from pytest's `-rA` summary, one line per test with its exact node
id: a junit report would name tests by class and name, which does not map back
to node ids of parametrised or nested tests.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.sessions.environments import EnvironmentCache, EnvironmentSpec, PreparationFailed
from evaluation.sandbox.sessions.limits import SessionLimits
from evaluation.sandbox.sessions.sandbox import SessionSandbox
from evaluation.verification.synthesis.sources import Files, SynthesisRefused

PYTEST = "python3 -m pytest -q -p no:cacheprovider -rA"
# Wide enough that pytest does not cut a failure's message in the summary line.
COLUMNS = 1000
OUTCOME_WORDS = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
MAX_OUTPUT_BYTES = 1024 * 1024


@dataclass
class SuiteRun:
    outcomes: dict[str, str] = field(default_factory=dict)  # node id -> passed | failed | error | skipped | ...
    messages: dict[str, str] = field(default_factory=dict)  # node id -> the failure's one-line message
    exit_code: int | None = None
    timed_out: bool = False
    output: str = ""
    wrote_to_tree: bool = False
    elapsed_s: float = 0.0

    @property
    def passed(self) -> set[str]:
        return {node for node, outcome in self.outcomes.items() if outcome in ("passed", "xfail")}

    @property
    def not_passed(self) -> list[str]:
        return sorted(node for node, outcome in self.outcomes.items() if outcome in ("failed", "error", "xpass"))


def _split_node(rest: str) -> tuple[str, str]:
    """(node id, message) of the text after the outcome word: the message follows the
    first ' - ' outside the brackets of a parametrised id."""
    depth = 0
    for index, char in enumerate(rest):
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        elif depth == 0 and rest.startswith(" - ", index):
            return rest[:index], rest[index + 3 :]
    return rest, ""


def parse_summary(output: str) -> tuple[dict[str, str], dict[str, str]]:
    """Outcomes and messages from the `short test summary info` section of `-rA`."""
    outcomes: dict[str, str] = {}
    messages: dict[str, str] = {}
    in_summary = False
    for line in output.splitlines():
        if "short test summary info" in line:
            in_summary = True
            continue
        if not in_summary:
            continue
        word, _, rest = line.partition(" ")
        if word not in OUTCOME_WORDS:
            continue
        if word == "SKIPPED":
            continue  # `SKIPPED [1] path:line: reason` names no node id
        node, message = _split_node(rest.strip())
        outcomes[node] = word.lower()
        if message:
            messages[node] = message.strip()
    return outcomes, messages


class SuiteRunner:
    """One session sandbox on the project's prepared environment; `run` per tree variant."""

    def __init__(self, files: Files, *, cache_root: Path, timeout_s: float = 120.0) -> None:
        self.files = files
        self.timeout_s = timeout_s
        try:
            self.environment = EnvironmentCache(cache_root).get(EnvironmentSpec(files=dict(files)))
        except PreparationFailed as exc:
            raise SynthesisRefused(f"The project's environment could not be prepared: {exc}") from exc
        tree_bytes = max(64 << 20, 4 * sum(len(data) for data, _ in files.values()))
        self.limits = SessionLimits(step_timeout_s=600.0, step_cpu_s=600.0, step_output_bytes=MAX_OUTPUT_BYTES,
                                    tree_bytes=min(tree_bytes, 2 << 30))  # fmt: skip
        self.sandbox: SessionSandbox | None = None
        self.steps = 0

    def __enter__(self) -> SuiteRunner:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None

    def _sandbox(self) -> SessionSandbox:
        if self.sandbox is None or not self.sandbox.alive:
            self.close()
            self.sandbox = SessionSandbox(self.environment, self.limits)
            self.sandbox.start()
        return self.sandbox

    def _step(self, action: dict, timeout_s: float) -> dict:
        """One step; a sandbox that died is replaced once (the platform's failure, not the tree's)."""
        for attempt in (1, 2):
            try:
                self.steps += 1
                return self._sandbox().step(action, timeout_s=timeout_s)
            except SandboxFailure:
                self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def run(self, changed: dict[str, str] | None = None, *, timeout_s: float | None = None) -> SuiteRun:
        """The suite on the base tree with `changed` ({path: text}) written over it."""
        timeout = timeout_s or self.timeout_s
        changed = changed or {}
        for path, text in changed.items():
            written = self._step({"kind": "write_file", "path": path, "content": text}, timeout)
            if written.get("exit_code") != 0:
                raise SandboxFailure(f"writing {path} failed: {written.get('stderr')}", anomaly="agent_error")
        restore = "".join(f"; cp /base/{shlex.quote(p)} {shlex.quote(p)}" for p in changed)
        command = f"COLUMNS={COLUMNS} {PYTEST}; status=$?{restore}; exit $status"
        observation = self._step({"kind": "bash", "command": command}, timeout)
        outcomes, messages = parse_summary(observation.get("stdout", ""))
        # A run that left files behind, or was killed before it put the changed files back
        # (a mutant that loops past the timeout), would leak into the next run: the next
        # one gets a fresh sandbox instead.
        touched = {change["path"] for change in observation.get("files_changed", [])}
        wrote = bool(touched - set(changed))
        if wrote or not set(changed) <= touched or observation.get("timed_out"):
            self.close()
        output = observation.get("stdout", "")[-20000:] + observation.get("stderr", "")[-4000:]
        return SuiteRun(outcomes=outcomes, messages=messages, exit_code=observation.get("exit_code"),
                        timed_out=bool(observation.get("timed_out")), wrote_to_tree=wrote,
                        elapsed_s=float(observation.get("elapsed_s") or 0.0), output=output)  # fmt: skip

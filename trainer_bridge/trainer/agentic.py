"""Agentic episodes on repository tasks: the policy acts in a sandbox holding the
repository, one tool call a turn, through the platform's session API.

A GRPO group is one session set up once and forked into `group_size` episodes. Each
turn, every unfinished episode's history goes to the policy; its answer is parsed as
one action (the format below), run as a step, and the observation goes back into the
episode's history, cut to a budget. An episode ends when the policy submits, or at
`max_steps`, when it is submitted for it; its reward is the verdict's (None when the
platform failed: such an episode is left out, never scored 0).

The tool-call format (AGENT_SYSTEM_PROMPT says it to the policy):

    <action>{"kind": "bash", "command": "pytest -q"}</action>
    <action>{"kind": "edit", "path": "pkg/mod.py", "old": "a - b", "new": "a + b"}</action>
    <submit/>
"""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from trainer_bridge.client import PlatformClient, PlatformError
from trainer_bridge.session_client import AgentSession, SessionReward
from trainer_bridge.trainer.data import TaskRecord
from trainer_bridge.trainer.episodes import Rollout, Turn
from trainer_bridge.trainer.policy import Answer, Policy, Query

REPOSITORY_KIND = "repository"
ACTION = re.compile(r"<action>\s*(.*?)\s*</action>", re.S)
SUBMIT = re.compile(r"<submit\s*/>")
AGENT_SYSTEM_PROMPT = (
    "You are working in a software repository to resolve the issue below. Act one step at a time: "
    "answer each message with exactly one tool call, a JSON object inside <action></action>. "
    'Tools: {"kind": "bash", "command": ...}; {"kind": "read_file", "path": ...}; '
    '{"kind": "write_file", "path": ..., "content": ...}; {"kind": "edit", "path": ..., "old": ..., "new": ...} '
    '(old must occur exactly once); {"kind": "run_tests", "tests": [optional test ids]}. '
    "You will see each call's output. When the issue is resolved, answer <submit/>."
)


def parse_action(text: str) -> tuple[str, dict[str, Any] | None, str]:
    """("action", the action, ""), ("submit", None, ""), or ("invalid", None, why)."""
    found = ACTION.search(text)
    if found is None:
        if SUBMIT.search(text):
            return "submit", None, ""
        return "invalid", None, "no <action>{...}</action> and no <submit/> in your answer"
    try:
        action = json.loads(found.group(1))
    except ValueError as exc:
        return "invalid", None, f"the action is not JSON: {exc}"
    if not isinstance(action, dict) or not isinstance(action.get("kind"), str):
        return "invalid", None, 'the action must be a JSON object with a "kind"'
    return "action", action, ""


def cut(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    half = budget // 2
    return f"{text[:half]}\n[... {len(text) - budget} characters cut ...]\n{text[-half:]}"


def observation_text(observation: dict[str, Any], budget: int) -> str:
    """An observation as the policy reads it, within `budget` characters."""
    head = "timed out" if observation.get("timed_out") else f"exit code {observation.get('exit_code')}"
    parts = [head]
    if observation.get("stdout"):
        parts.append("stdout:\n" + observation["stdout"])
    if observation.get("stderr"):
        parts.append("stderr:\n" + observation["stderr"])
    changed = observation.get("files_changed") or []
    if changed:
        parts.append("files changed: " + ", ".join(f"{c['path']} ({c['operation']})" for c in changed[:20]))
    return cut("\n".join(parts), budget)


@dataclass
class AgenticEpisode:
    task: TaskRecord
    group: int
    index: int
    seed: int = 0
    session: AgentSession | None = None
    messages: list[dict[str, str]] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    verdict: SessionReward | None = None
    failure: str = ""  # the platform's, when the session could not go on

    @property
    def finished(self) -> bool:
        return self.verdict is not None or bool(self.failure)

    @property
    def scored(self) -> bool:
        return self.verdict is not None and self.verdict.reward is not None

    @property
    def passed(self) -> bool:
        return self.scored and self.verdict.reward == 1.0

    @property
    def guided(self) -> bool:
        return any(turn.answer.source != "model" for turn in self.turns)

    def reward(self, discount: float) -> float | None:
        """The verdict's reward: one verdict judges the whole episode, so no turn discount."""
        return self.verdict.reward if self.scored else None

    def next_query(self) -> Query:
        return Query(task=self.task, messages=tuple(self.messages), turn=len(self.turns) + 1, group=self.group,
                     episode=self.index, episode_seed=self.seed)  # fmt: skip


def first_messages(task: TaskRecord, observation: dict[str, Any], budget: int) -> list[dict[str, str]]:
    statement = observation.get("statement") or next((m["content"] for m in task.prompt if m["role"] == "user"), "")
    listing = "\n".join(entry["path"] for entry in observation.get("listing", [])[:200])
    user = f"{statement}\n\nThe repository, in {observation.get('cwd', '/repo')}:\n{cut(listing, budget)}"
    return [{"role": "system", "content": AGENT_SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _act(episode: AgenticEpisode, answer: Answer, budget: int, step_timeout_s: float) -> None:
    """Run one answer of the policy in the episode's session."""
    kind, action, why = parse_action(answer.text)
    episode.messages.append({"role": "assistant", "content": answer.text})
    if kind == "submit":
        episode.turns.append(Turn(answer=answer, result={"submitted": True}))
        _submit(episode)
        return
    if kind == "invalid":
        observation = {"exit_code": 2, "stderr": why}
    else:
        try:
            observation = episode.session.execute(action, timeout_s=step_timeout_s).raw
        except PlatformError as exc:
            if exc.status >= 500:  # the platform failed the session: no reward, never 0
                episode.failure = f"{exc.code}: {exc.message}"
                episode.turns.append(Turn(answer=answer, result=None))
                return
            observation = {"exit_code": 2, "stderr": f"{exc.code}: {exc.message}"}  # the action was refused
    episode.turns.append(Turn(answer=answer, result=observation))
    episode.messages.append({"role": "user", "content": observation_text(observation, budget)})


def _submit(episode: AgenticEpisode) -> None:
    try:
        episode.verdict = episode.session.submit()
    except PlatformError as exc:
        episode.failure = f"{exc.code}: {exc.message}"


def _open_group(client: PlatformClient, task: TaskRecord, group: int, size: int, seed: int,
                budget: int) -> list[AgenticEpisode]:  # fmt: skip
    """One session set up for the task, forked into the group's episodes."""
    parent = client.session(task.version_hash)
    try:
        children = parent.fork(size)
    finally:
        parent.close()
    episodes = []
    for index, session in enumerate(children):
        episode = AgenticEpisode(task=task, group=group, index=index, seed=seed, session=session)
        episode.messages = first_messages(task, session.observation, budget)
        episodes.append(episode)
    return episodes


def run_agentic_episodes(
    policy: Policy, tasks: list[TaskRecord], *, client: PlatformClient, group_size: int, max_steps: int, seed: int,
    generation_batch: int, first_group: int = 0, observation_chars: int = 4000, step_timeout_s: float = 60.0,
    workers: int = 8,
) -> Rollout:  # fmt: skip
    """`group_size` agentic episodes for each task, turn by turn; steps of different
    episodes run side by side (each is a call to the platform)."""
    with ThreadPoolExecutor(workers, thread_name_prefix="agentic") as pool:
        groups = list(pool.map(lambda item: _open_group(client, item[1], first_group + item[0], group_size, seed,
                                                         observation_chars), enumerate(tasks)))  # fmt: skip
        episodes = [episode for group in groups for episode in group]
        rollout = Rollout(episodes)  # type: ignore[arg-type] - the loop reads only what both kinds have
        for turn in range(1, max_steps + 1):
            active = [ep for ep in episodes if not ep.finished]
            if not active:
                break
            for n, start in enumerate(range(0, len(active), generation_batch)):
                chunk = active[start : start + generation_batch]
                started = time.monotonic()
                answers = policy.answer([ep.next_query() for ep in chunk], seed=(seed * 1000 + turn) * 1000 + n)
                rollout.generate_s += time.monotonic() - started
                rollout.tokens += sum(len(a.generation.completion_ids) for a in answers if a.generation is not None)
                list(pool.map(lambda pair: _act(pair[0], pair[1], observation_chars, step_timeout_s),
                              zip(chunk, answers, strict=True)))  # fmt: skip
        list(pool.map(_submit, [ep for ep in episodes if not ep.finished]))  # out of steps: judged as they stand
    return rollout

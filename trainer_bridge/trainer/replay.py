"""A policy that answers with each task's known programs (GET .../solutions): the
curators' references and adversarial solutions, and the reference's mutants that
the latest verification killed or that survived it, drawn in a chosen mix.

A replay of references must earn 1 within the reward noise, and a replay of
killed mutants 0: run through the real reward API, that checks the whole reward
path end to end, and it lets the loop run without a model."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from typing import Any

from trainer_bridge.trainer.policy import Answer, Query


def known_programs(member: dict[str, Any]) -> dict[str, list[str]]:
    """Kind -> the code of the member's programs of that kind (kinds of config.REPLAY_KINDS)."""
    kinds: dict[str, list[str]] = {"reference": [], "adversarial": [], "killed": [], "survived": []}
    for solution in member.get("solutions", []):
        if solution["kind"] in kinds:
            kinds[solution["kind"]].append(solution["code"])
    for mutant in member.get("mutants", []):
        if mutant["verdict"] in ("killed", "survived"):
            kinds[mutant["verdict"]].append(mutant["code"])
    return kinds


class ReplayPolicy:
    learnable = False

    def __init__(self, members: Iterable[dict[str, Any]], *, mix: dict[str, float]) -> None:
        self.programs = {m["version_hash"]: known_programs(m) for m in members}
        self.mix = {kind: weight for kind, weight in mix.items() if weight > 0}

    def answer(self, queries: list[Query], *, seed: int) -> list[Answer]:
        return [self._one(q, seed) for q in queries]

    def _one(self, query: Query, seed: int) -> Answer:
        programs = self.programs.get(query.task.version_hash)
        if programs is None:
            raise ValueError(f"task {query.task.task_id}: no known solutions were fetched for it")
        kinds = [kind for kind in sorted(self.mix) if programs[kind]]
        if not kinds:
            raise ValueError(f"task {query.task.task_id} has no program of the kinds asked for "
                             f"({', '.join(sorted(self.mix))}); it has {_have(programs)}")  # fmt: skip
        # One draw per (seed, task, episode, turn): the same run replays the same programs.
        key = f"{seed}:{query.task.version_hash}:{query.group}:{query.episode}:{query.turn}"
        if query.task.kind == "repository":  # one patch is played over several turns: one draw an episode
            key = f"{query.episode_seed}:{query.task.version_hash}:{query.group}:{query.episode}"
        rng = random.Random(hashlib.sha256(key.encode()).digest())  # noqa: S311 - reproducible choice, not a secret
        kind = rng.choices(kinds, weights=[self.mix[k] for k in kinds])[0]
        code = rng.choice(programs[kind])
        if query.task.kind == "repository":
            return Answer(text=patch_action(code, query.turn), source=kind)
        return Answer(text=f"```{query.task.fence}\n{code.rstrip()}\n```\n", source=kind)


PATCH_FILE = "/tmp/replayed.diff"  # noqa: S108 - in the session's sandbox, not on this host


def patch_action(patch: str, turn: int) -> str:
    """A repository task's patch played as an agent would: write it, apply it, run the
    visible tests, submit (turn 1, 2, 3, then 4 and later), in the tool-call format of
    agentic.py. The draw is made once an episode, so one episode plays one patch."""
    plan = [
        {"kind": "write_file", "path": PATCH_FILE, "content": patch},
        {"kind": "bash", "command": f"git apply --whitespace=nowarn {PATCH_FILE} && git status --short"},
        {"kind": "run_tests"},
    ]
    if turn > len(plan):
        return "<submit/>"
    return f"<action>{json.dumps(plan[turn - 1])}</action>"


def _have(programs: dict[str, list[str]]) -> str:
    return ", ".join(f"{len(v)} {k}" for k, v in programs.items()) or "none"

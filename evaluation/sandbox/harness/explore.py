"""The explore run kind: tests that close the gaps they find, searched for in one run.

For a Python function task (its tests of the check_function or assertions kind),
with the reference as the run's solution and the mutants in its tests frame:

1. capture: the task's tests run against the reference with its entry point
   wrapped in a recorder, which notes the argument tuples they pass it
   (explore_capture.py);
2. generate: new inputs by type-aware mutation of those, deterministic from the
   seed (explore_generate.py);
3. keep the valid ones: the curator's precondition accepts them, and the
   reference, called twice, returns the same plain data within its per-call
   budget both times;
4. compare: each mutant runs on every valid input; the simplest input it is told
   apart on is shrunk while the reference still accepts it and the mutant still
   differs (explore_shrink.py); a mutant never told apart is `same`. A mutant
   told apart only by running past its budget is slower, not yet wrong: the
   shrunk input (then the unshrunk one) is run again with the task's own time
   limit, and only a call that outlasts that proves it (a test would fail it);
   one that answers the reference's value within it leaves the mutant `same`,
   noted as `slower`;
5. report: counts, each mutant's outcome and counterexample, and proposals of new
   tests (counterexamples first, then inputs with diverse outputs), as data in
   the run's record (explore_report.py).

Calls go through explore_calls.Runner: each is held to a budget of its own, and
one that outlasts it costs its process, never the run. Near the run's deadline
the exploration stops and reports what it has, with "complete": false.
"""

from __future__ import annotations

import time

from . import remote, scope
from .explore_annotations import signature
from .explore_calls import LOAD_WAIT_S, Answer, Runner
from .explore_capture import capture
from .explore_generate import Generator, stable_hash
from .explore_report import report
from .explore_shrink import variants
from .explore_values import copy, has_opaque, key_of, same, text_of, weight
from .outcomes import CandidateFailure, LoadError

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

    from .judge import Judge

GENERATOR = "explore-1"  # bump when what is generated from a seed changes
REASONS = ("raised", "timeout", "precondition", "nondeterministic", "opaque", "duplicate")
MARGIN_S = 3.0  # left of the run's wall time when the exploration stops: the run must still end cleanly
SHRINK_CALLS = 200  # calls one shrink may make
SHRINK_S = 3.0  # and the time it may take (a mutant that hangs costs twice its budget a step)
MUTANT_FLOOR_S = 0.2  # the least budget a mutant's call gets (10 x the reference's time otherwise)
DUPLICATE_RETRIES = 4  # candidates made again in place of one already judged, before it counts as a duplicate
REFERENCE_FLOOR_S = 0.5  # the least budget a reference's call gets (20 x its slowest tested call otherwise)


class OutOfTime(Exception):
    """The run's deadline is too near for the next call: stop, report what there is."""


class Input:
    """A valid input: the reference's answer to it, and what is known of it since."""

    __slots__ = ("args", "expected", "key", "kills", "kwargs", "seconds", "source")

    def __init__(self, args: tuple, kwargs: dict, key: str, expected: Any, seconds: float) -> None:
        self.args, self.kwargs, self.key, self.expected, self.seconds = args, kwargs, key, expected, seconds
        self.kills: list[str] = []  # the mutants told apart on it
        self.source = "generated"


class Finding:
    """A mutant's counterexample: the input, the mutant's answer, the shrinks made."""

    __slots__ = ("answer", "input", "steps")

    def __init__(self, found: Input, answer: Answer, steps: int) -> None:
        self.input, self.answer, self.steps = found, answer, steps


def _rank(answer: Answer) -> int:
    """How plainly an answer tells a mutant apart: a wrong value best, then an
    exception or an exit, then a timeout (the likeliest to be the load's doing)."""
    return {"value": 0, "raised": 1, "exited": 1}.get(answer.kind, 2)


def run(judge: Judge) -> None:
    """Explore, and leave the data on the judge for its record (outcomes.run_record)."""
    exploration = Exploration(judge)
    exploration.explore()
    judge.data = report(exploration, GENERATOR)


class Exploration:
    def __init__(self, judge: Judge) -> None:
        tests = judge.tests
        self.judge = judge
        self.suite_kind = "check_function" if tests.get("suite_kind") == "check_function" else "assertions"
        self.seed = int(tests.get("seed", judge.run_spec.get("seed", 0)))
        self.inputs_wanted = max(0, int(tests.get("inputs", 200)))
        self.keep = max(0, int(tests.get("keep", 10)))
        self.mutants = [(str(m.get("id")), str(m.get("code") or "")) for m in tests.get("mutants") or []
                        if isinstance(m, dict)]  # fmt: skip
        self.given_budget = tests.get("call_budget_s")
        # The time limit a test of the task runs under: what a timeout must outlast to prove anything.
        self.test_limit = float(tests["test_limit_s"]) if tests.get("test_limit_s") else None
        self.complete = True
        self.reasons = dict.fromkeys(REASONS, 0)
        self.captured: list[tuple[tuple, dict]] = []
        self.captured_keys: set[str] = set()
        self.captured_valid = 0
        self.generated = self.valid = 0
        self.pool: list[Input] = []  # the valid inputs, captured ones first, in the order found
        self.lightest: list[Input] = []  # the same, lightest first: the order mutants meet them in
        self.known: dict[str, Input | str] = {}  # every input judged: valid, or why not
        self.compared: dict[str, set[str]] = {}  # input key -> the mutants run on it
        self.outcomes: dict[str, dict[str, Any]] = {}  # mutant id -> outcome, tried, finding
        self.precondition: Any = None
        self.precondition_error = ""
        self.budget = REFERENCE_FLOOR_S

    # -- the steps -------------------------------------------------------------------------

    def explore(self) -> None:
        judge = self.judge
        child, names, recorder = capture(judge, self.suite_kind)
        judge.mark("captured")
        self.scope = dict(names) if names is not None else {"__name__": "__precondition__"}
        self.reference = Runner(judge, None, "solution", child=child,
                                on_spawn=lambda fresh: remote.rebind_proxies(judge, self.scope, fresh))  # fmt: skip
        self._load_precondition()
        self.captured = recorder.inputs()
        self.captured_keys = {key_of(args, kwargs) for args, kwargs in self.captured}
        derived = max(REFERENCE_FLOOR_S, 20 * recorder.slowest)
        wanted = float(self.given_budget) if self.given_budget else derived
        # No single call may take a tenth of what is left: the budget serves many calls.
        self.budget = min(wanted, max(REFERENCE_FLOOR_S, (judge.remaining() - MARGIN_S) / 10))
        try:
            self._validate_captured()
            judge.mark("captured_validated")
            self._generate()
            judge.mark("generated")
        except OutOfTime:
            self.complete = False
        self._run_mutants()
        judge.mark("mutants_run")
        try:
            self._cross_kills()
        except OutOfTime:
            self.complete = False

    def _load_precondition(self) -> None:
        source = self.judge.tests.get("precondition") or ""
        if not source:
            return
        try:
            # In the tests' scope itself (used for nothing else now), so that the proxies in
            # it follow the reference to each fresh process (Runner.on_spawn).
            exec(compile(source, "<precondition>", "exec"), self.scope)  # noqa: S102 - the curator's code, as tests are
            self.precondition = self.scope.get("precondition")
            if not callable(self.precondition):
                raise TypeError("the precondition defines no precondition(*args, **kwargs)")
        except (Exception, SystemExit) as exc:  # every input is then refused by it, and the data says why
            self.precondition = None
            self.precondition_error = f"{type(exc).__name__}: {exc}"[:2000]

    def _validate_captured(self) -> None:
        for args, kwargs in self.captured:
            found = self.check(args, kwargs)
            if isinstance(found, Input):
                found.source = "captured"
                self.pool.append(found)
                self.captured_valid += 1

    def _generate(self) -> None:
        import random

        judge = self.judge
        rng = random.Random(self.seed ^ stable_hash(sorted(self.captured_keys)))
        params = signature(scope._statements(judge.run_spec["solution"]), judge.run_spec.get("entry_point") or "")
        generator = Generator(rng, self.captured, params)
        # The mutants get at least half of what is left once generation starts.
        reserve = 0.5 * max(0.0, judge.remaining() - MARGIN_S) if self.mutants else 0.0
        while self.generated < self.inputs_wanted:
            if judge.remaining() < MARGIN_S + reserve + self.budget:
                self.complete = False
                return
            for _retry in range(DUPLICATE_RETRIES + 1):  # a repeat costs nothing to make again
                candidate = generator.next()
                if candidate is None:  # nothing to make inputs from: no test calls it, no annotations say how
                    return
                key = key_of(*candidate)
                if key not in self.known and key not in self.captured_keys:
                    break
            self.generated += 1
            args, kwargs = candidate
            found = "duplicate" if key in self.known or key in self.captured_keys else self.check(args, kwargs)
            if isinstance(found, Input):
                self.pool.append(found)
                self.valid += 1
                generator.accept(candidate)
            else:
                self.reasons[found] += 1
                if found == "timeout":
                    generator.pools.timed_out(candidate)

    def _run_mutants(self) -> None:
        judge = self.judge
        # Lightest first: a mutant told apart early is told apart on a small input,
        # cheap to run and quick to shrink.
        self.lightest = sorted(self.pool, key=lambda found: weight((found.args, found.kwargs)))
        for index, (mutant_id, code) in enumerate(self.mutants):
            left = len(self.mutants) - index
            share = (judge.remaining() - MARGIN_S) * 0.95 / left  # 5% kept for the cross-check
            if judge.remaining() < MARGIN_S + MUTANT_FLOOR_S:
                self.complete = False
                self.outcomes[mutant_id] = {"outcome": "same", "tried": 0, "finding": None}
                continue
            self.outcomes[mutant_id] = self._explore_mutant(mutant_id, code, time.monotonic() + max(share, 1.0))

    def _cross_kills(self) -> None:
        """Run every mutant on the other mutants' counterexamples it has not met, so
        each proposal names all the mutants it tells apart."""
        findings = {f.input.key: f.input for o in self.outcomes.values() if (f := o.get("finding")) is not None}
        for mutant_id, code in self.mutants:
            if self.outcomes.get(mutant_id, {}).get("outcome") not in ("same", "differs"):
                continue
            missing = [i for key, i in findings.items() if mutant_id not in self.compared.get(key, ())]
            if not missing:
                continue
            runner = Runner(self.judge, code, "mutant")
            try:
                for found in missing:
                    self.compare(runner, mutant_id, found, retry=True)  # noted on the input's kills
            finally:
                runner.discard()

    # -- one mutant --------------------------------------------------------------------------

    def _explore_mutant(self, mutant_id: str, code: str, own_deadline: float) -> dict[str, Any]:
        """Sweep the valid inputs, lightest first, until the mutant is told apart; shrink
        that input; then go on sweeping, within the mutant's share of the time, to note
        what else tells it apart (for the proposals), and, if it was told apart only by
        an exception or a timeout so far, to find an input it answers wrongly."""
        runner = Runner(self.judge, code, "mutant")
        try:
            runner.start(min(LOAD_WAIT_S, max(0.1, self.judge.remaining() - MARGIN_S)))
        except (LoadError, CandidateFailure):
            runner.discard()
            return {"outcome": "not_loaded", "tried": 0, "finding": None}
        tried = 0
        finding: Finding | None = None
        unshrunk: Finding | None = None  # a timeout's input before shrinking: the likelier to outlast the limit
        try:
            for found in self.lightest:
                if time.monotonic() > own_deadline:
                    if finding is None:
                        self.complete = False  # its share of the time is spent: `same` so far, not for sure
                    break
                verdict = self.compare(runner, mutant_id, found, retry=finding is None)
                if finding is None:
                    tried += 1
                if verdict.kind != "differs":
                    continue
                if finding is None or (_rank(finding.answer) > 0 and _rank(verdict.answer) == 0):
                    if _rank(verdict.answer) == 2 and unshrunk is None:
                        unshrunk = Finding(found, verdict.answer, 0)
                    shrunk = self._shrink(runner, mutant_id, Finding(found, verdict.answer, 0))
                    if finding is None or _rank(shrunk.answer) < _rank(finding.answer):
                        finding = shrunk
                elif verdict.answer.kind in ("timeout", "exited"):
                    break  # once told apart, a call that costs a process or a budget ends the sweep
            if finding is not None and _rank(finding.answer) == 2 and self.test_limit:
                finding, slower = self._confirm_timeout(runner, mutant_id, finding, unshrunk)
                if finding is None:
                    return {"outcome": "same", "tried": tried, "finding": None, "slower": slower}
        except OutOfTime:
            self.complete = False
            if finding is not None and _rank(finding.answer) == 2 and self.test_limit:
                return {"outcome": "unconfirmed", "tried": tried, "finding": None}
        finally:
            runner.discard()
        if finding is None:
            return {"outcome": "same", "tried": tried, "finding": None}
        return {"outcome": "differs", "tried": tried, "finding": finding}

    def _confirm_timeout(self, runner: Runner, mutant_id: str, finding: Finding,
                         unshrunk: Finding | None) -> tuple[Finding | None, dict[str, Any] | None]:  # fmt: skip
        """Run a timed-out counterexample again with the task's own time limit: the
        finding if the mutant outlasts it (or answers wrongly after all), else None
        and how much slower it was (the input and the seconds it took)."""
        assert self.test_limit is not None
        slower = None
        tried: set[str] = set()
        for candidate in (finding, unshrunk):
            if candidate is None or candidate.input.key in tried:
                continue
            tried.add(candidate.input.key)
            found = candidate.input
            self.need(self.test_limit)
            answer = runner.call(found.args, found.kwargs, self.test_limit)
            if answer.kind != "value" or not same(found.expected, answer.value):
                if mutant_id not in found.kills:
                    found.kills.append(mutant_id)
                return Finding(found, answer, candidate.steps), None
            slower = {"args": text_of(found.args), "kwargs": text_of(found.kwargs),
                      "seconds": round(answer.seconds, 3), "reference_seconds": round(found.seconds, 4)}  # fmt: skip
        return None, slower

    def _shrink(self, runner: Runner, mutant_id: str, finding: Finding) -> Finding:
        """Greedy: take the first simpler variant that the reference still accepts and
        the mutant still gets wrong (no less plainly), until none is or the calls
        are spent."""
        calls = 0
        seen = {finding.input.key}
        progress = True
        until = time.monotonic() + SHRINK_S
        try:
            while progress and calls < SHRINK_CALLS and time.monotonic() < until:
                progress = False
                current = weight((finding.input.args, finding.input.kwargs))
                for args, kwargs in variants(finding.input.args, finding.input.kwargs):
                    if calls >= SHRINK_CALLS or time.monotonic() >= until:
                        break
                    key = key_of(args, kwargs)
                    if key in seen or weight((args, kwargs)) >= current:
                        continue
                    seen.add(key)
                    calls += 0 if key in self.known else 2
                    found = self.check(args, kwargs)
                    if not isinstance(found, Input):
                        continue
                    calls += 1
                    # A timeout is shrunk to a timeout: each candidate gets the retry's budget at once.
                    verdict = self.compare(runner, mutant_id, found, patient=_rank(finding.answer) == 2)
                    if verdict.kind == "differs" and _rank(verdict.answer) <= _rank(finding.answer):
                        finding = Finding(found, verdict.answer, finding.steps + 1)
                        progress = True
                        break
        except OutOfTime:
            self.complete = False
        return finding

    # -- calls ---------------------------------------------------------------------------------

    def need(self, seconds: float) -> None:
        if self.judge.remaining() < MARGIN_S + seconds:
            raise OutOfTime()

    def admits(self, args: tuple, kwargs: dict) -> bool:
        if self.precondition_error:
            return False
        if self.precondition is None:
            return True
        try:
            return bool(self.precondition(*copy(args), **copy(kwargs)))
        except (Exception, SystemExit):  # a precondition that raises refuses the input
            return False

    def check(self, args: tuple, kwargs: dict) -> Input | str:
        """The input as an Input if it is valid, else why not (a REASONS word); each
        input is judged once."""
        key = key_of(args, kwargs)
        if key in self.known:
            return self.known[key]
        result: Input | str
        if not self.admits(args, kwargs):
            result = "precondition"
        else:
            self.need(self.budget)
            first = self.reference.call(args, kwargs, self.budget)
            if first.kind != "value":
                result = "timeout" if first.kind == "timeout" else "raised"
            elif has_opaque(first.value):
                result = "opaque"
            else:
                self.need(self.budget)
                second = self.reference.call(args, kwargs, self.budget)
                if second.kind == "timeout":
                    result = "timeout"
                elif second.kind != "value" or not same(first.value, second.value):
                    result = "nondeterministic"
                else:
                    result = Input(args, kwargs, key, first.value, min(first.seconds, second.seconds))
                    result.source = "captured" if key in self.captured_keys else "generated"
        self.known[key] = result
        return result

    def compare(self, runner: Runner, mutant_id: str, found: Input, *, retry: bool = False,
                patient: bool = False) -> Verdict:  # fmt: skip
        """Run the mutant on a valid input. A call past its budget (10 x the reference's
        time, at least MUTANT_FLOOR_S) is tried again with twice the budget when
        `retry`, and only a second timeout tells it apart: the first may be the load's.
        `patient` gives the call twice the budget at once."""
        budget = max(MUTANT_FLOOR_S, 10 * found.seconds) * (2 if patient else 1)
        self.need(budget)
        answer = runner.call(found.args, found.kwargs, budget)
        if answer.kind == "timeout" and retry and not patient:
            self.need(2 * budget)
            answer = runner.call(found.args, found.kwargs, 2 * budget)
        self.compared.setdefault(found.key, set()).add(mutant_id)
        differs = answer.kind != "value" or not same(found.expected, answer.value)
        # A timeout under this budget says the mutant is slower, not that a test would fail it.
        if differs and answer.kind != "timeout" and mutant_id not in found.kills:
            found.kills.append(mutant_id)
        return Verdict("differs" if differs else "same", answer)


class Verdict:
    __slots__ = ("answer", "kind")

    def __init__(self, kind: str, answer: Answer) -> None:
        self.kind, self.answer = kind, answer

"""The Markdown report of an audit, rendered from `audit_figures`' output with the
`report.md` template next to this module (`string.Template`).

The template holds the text; this module only formats the figures into the values
it names. Two kinds of placeholder:

- `$name`, inside a line: one formatted value (a count, a percentage, a slug list);
- `${name}` at the start of a line: a block of whole lines, each ending in a newline,
  or nothing at all (an optional paragraph, a table's rows). The text after the
  placeholder is the line that follows the block, so an empty block leaves no blank line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

from evaluation.verification import executions
from evaluation.verification.audit.report_figures import NOISE_BINS

TEMPLATE = Path(__file__).with_name("report.md")

# The published figures the report compares with.
ALPHACODE_FALSE_POSITIVE_RATE = 0.30  # hand check of 50 solved HumanEval problems, AlphaCode Table 2
ALPHACODE_TESTS_PER_PROBLEM = 7.77  # HumanEval's average number of tests a problem, same table
EVALPLUS_PASS_AT_K_DROP = (0.193, 0.289)  # "up to 19.3-28.9%" across 26 models, HumanEval+ (~80x the tests)


@lru_cache(maxsize=1)
def _template() -> Template:
    return Template(TEMPLATE.read_text(encoding="utf-8"))


def audit_markdown(figures: dict[str, Any], *, command: str, generated_at: str, cores: int, dataset: str) -> str:
    """The report, from `audit_figures`' output and the run's provenance."""
    values: dict[str, Any] = {"command": command, "generated_at": generated_at, "dataset": dataset, "cores": cores}
    for section in (
        _header(figures),
        _reference(figures),
        _mutation(figures),
        _probes_and_flags(figures),
        _generated(figures["generated"]),
        _noise(figures["noise"]),
        _runtime(figures["runtime"]),
        _comparison(figures),
    ):
        # One name, one value: a section must not quietly replace another's.
        assert not values.keys() & section.keys(), sorted(values.keys() & section.keys())
        values.update(section)
    return _template().substitute(values)


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value * 100:.{digits}f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _names(slugs: Sequence[str], most: int = 12) -> str:
    shown = ", ".join(f"`{s}`" for s in slugs[:most])
    return shown + (f" and {len(slugs) - most} more" if len(slugs) > most else "")


def _block(lines: Iterable[str]) -> str:
    """Whole lines for a `${block}` placeholder: each ends in a newline."""
    return "".join(f"{line}\n" for line in lines)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{status} {count}" for status, count in counts.items())


def _header(f: dict[str, Any]) -> dict[str, Any]:
    """Provenance and the summary table's figures that no later section formats."""
    config, ref, run = f["config"], f["reference"], f["runtime"]
    unfinished = f["unfinished"]
    return {
        "tasks": f["tasks"],
        "config_hash": f["config_hash"],
        "harness_version": f["harness_version"],
        "repeats": config.get("repeats"),
        "mutants": config.get("mutants"),
        "mutation_seed": config.get("mutation_seed"),
        "probes_on": "on" if config.get("probes") else "off",
        "backend": config.get("backend"),
        "configs_warning": _block(
            [f"- Warning: verifications under more than one configuration were found: {f['configs']}"]
            if len(f["configs"]) > 1
            else []
        ),
        "done": f["verifications_done"],
        "verified": f["verdicts"].get("verified", 0),
        "flagged": f["verdicts"].get("flagged", 0),
        "executions": run["executions"],
        "reference_passed_share": _pct(_share(ref["runs"] - ref["failed"], ref["runs"])),
        "noise_median_summary": _pct(f["noise"]["median"]),
        "span_s": _num(run["span_s"], 1),
        "unfinished": _block(
            [
                f"Not finished, left out of every figure: {len(unfinished)} "
                f"({', '.join(f'`{slug}` ({state})' for slug, state in unfinished[:20])}).",
                "",
            ]
            if unfinished
            else []
        ),
    }


def _reference(f: dict[str, Any]) -> dict[str, Any]:
    ref, flaky = f["reference"], f["flaky"]
    if ref["tasks_failing"]:
        failures = ["Tasks whose reference did not pass every run:", "", "| task | failed runs | how |"]
        failures.append("| --- | --- | --- |")
        for row in ref["tasks_failing"]:
            failures.append(f"| `{row['slug']}` | {row['failed']} of {row['runs']} | {_counts(row['statuses'])} |")
    else:
        failures = ["No reference run failed."]
    return {
        "reference_passed": ref["runs"] - ref["failed"],
        "reference_runs": ref["runs"],
        "false_negative_rate": _pct(ref["failure_rate"]["value"], 2),
        "false_negative_low": _pct(ref["failure_rate"]["low"], 2),
        "false_negative_high": _pct(ref["failure_rate"]["high"], 2),
        "reference_failures": _block(failures),
        "flaky_tasks": len(flaky["tasks"]),
        "flaky_judged": flaky["judged"],
        "flaky_names": (": " + _names([row["slug"] for row in flaky["tasks"]]) + ".") if flaky["tasks"] else ".",
    }


def _mutation(f: dict[str, Any]) -> dict[str, Any]:
    mut = f["mutation"]
    histogram = []
    for index, count in enumerate(mut["histogram"]):
        upper = "100%]" if index == 9 else f"{(index + 1) * 10}%)"
        histogram.append(f"| [{index * 10}%, {upper} | {count} |")
    timeouts = []
    if f["timeouts"]:
        timeouts = ["| role | timed out | stopped after (min / median / max, s) |", "| --- | --- | --- |"]
        for role, row in f["timeouts"].items():
            stopped = f"{row['min_s']:.2f} / {row['median_s']:.2f} / {row['max_s']:.2f}"
            timeouts.append(f"| {role} | {row['count']} | {stopped} |")
        timeouts.append("")
    return {
        "mutation_mean": _pct(mut["mean"]),
        "mutation_median": _pct(mut["median"]),
        "surviving": mut["surviving"],
        "counted": mut["counted"],
        "surviving_share": _pct(_share(mut["surviving"], mut["counted"])),
        "tasks_scored": mut["tasks_scored"],
        "without_mutants": f" ({mut['tasks_without_mutants']} had none)" if mut["tasks_without_mutants"] else "",
        "killed": mut["killed"],
        "pooled": _pct(mut["pooled"]["value"]),
        "histogram": _block(histogram),
        "perfect": mut["perfect"],
        "mutant_statuses": _counts(mut["statuses"]),
        "cap_factor": f"{executions.MUTANT_CAP_FACTOR:g}",
        "cap_floor": f"{executions.MUTANT_CAP_FLOOR_S:g}",
        "cap_unknown": f"{executions.MUTANT_CAP_UNKNOWN_S:g}",
        "timeouts": _block(timeouts),
        "weak_below": _pct(mut["weak_below"], 0),
    }


def _probes_and_flags(f: dict[str, Any]) -> dict[str, Any]:
    """The WEAK_TESTS table, the probes table, the flags table and the checks per task."""
    weak = []
    if f["weak_tests"]:
        weak = ["| task | mutation score | killed / counted | surviving mutants |", "| --- | --- | --- | --- |"]
        for row in f["weak_tests"]:
            weak.append(
                f"| `{row['slug']}` | {_pct(row['score'])} | {row['killed']} / {row['counted']} | {row['surviving']} |"
            )
        weak.append("")
    probes = [
        f"| `{probe['name']}` | {probe['tasks_run']} | {probe['tasks_passed']} | "
        f"{_names(probe['passed_on'], 8) if probe['passed_on'] else '-'} |"
        for probe in f["probes"]
    ]
    flags = [f"| {row['code']} | {row['severity']} | {row['tasks']} |" for row in f["flags"]] or ["| (none) | | 0 |"]
    checks = f["checks"]
    return {
        "weak_tasks": len(f["weak_tests"]),
        "weak_tests": _block(weak),
        "probes": _block(probes),
        "hackable_tasks": len(f["hackable_tasks"]),
        "flags": _block(flags),
        "checks_mean": _num(checks["mean"], 2),
        "checks_median": _num(checks["median"], 1),
        "checks_min": checks["min"],
        "checks_max": checks["max"],
        "checks_below": checks["below_minimum"],
        "checks_minimum": checks["minimum"],
        "alphacode_tests": ALPHACODE_TESTS_PER_PROBLEM,
    }


def _generated(g: dict[str, Any]) -> dict[str, Any]:
    """The generated inputs: how many, what they said of the survivors, the tests proposed."""
    rows = []
    if g["tasks"]:
        rows = ["| task | proven weak survivors | probably equivalent | equivalence share | score without them "
                "| tests proposed | accepted |", "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
        rows += [
            f"| `{row['slug']}` | {row['proven_weak']} | {row['probably_equivalent']} | "
            f"{_pct(row['equivalence_share'])} | {_pct(row['score_nonequivalent'])} | {row['proposed']} | "
            f"{row['accepted']} |"
            for row in g["tasks"]
        ]
        rows.append("")
    return {
        "generated_judged": g["tasks_judged"],
        "generated_not_judged": g["not_judged"],
        "inputs_generated": g["inputs_generated"],
        "inputs_valid": g["inputs_valid"],
        "generated_survivors": g["survivors"],
        "proven_weak": g["proven_weak"],
        "proven_weak_tasks": g["tasks_with_proven_weak"],
        "probably_equivalent": g["probably_equivalent"],
        "generated_unjudged": g["unjudged"],
        "equivalence_share": _pct(g["equivalence_share"]),
        "tests_proposed": g["tests_proposed"],
        "tests_accepted": g["tests_accepted"],
        "generated_tasks": _block(rows),
    }


def _noise(noise: dict[str, Any]) -> dict[str, Any]:
    bins = [
        f"| [{_pct(low, 0)}, {_pct(high, 0)}{']' if high == 1.0 else ')'} | {count} |"
        for (low, high), count in zip(NOISE_BINS, noise["bins"], strict=True)
    ]
    return {
        "correct_share": noise["correct_share"],
        "known_wrong_passed": noise["known_wrong_passed"],
        "known_wrong_runs": noise["known_wrong_runs"],
        "noise_estimated": noise["tasks"] - noise["unknown"],
        "noise_tasks": noise["tasks"],
        "noise_mean": _pct(noise["mean"], 2),
        "noise_median": _pct(noise["median"], 2),
        "noise_min": _pct(noise["min"], 2),
        "noise_max": _pct(noise["max"], 2),
        "noise_mean_low": _pct(noise["mean_low"], 2),
        "noise_mean_high": _pct(noise["mean_high"], 2),
        "noise_bins": _block(bins),
    }


def _runtime(run: dict[str, Any]) -> dict[str, Any]:
    headroom = run["headroom_min"]
    return {
        "per_s": _num(run["per_s"], 1),
        "roles": _block(
            f"| {role} | {row['executions']} | {row['wall_s']:.1f} |" for role, row in run["by_role"].items()
        ),
        "statuses": _counts(run["statuses"]),
        "sandbox_errors_excluded": run["sandbox_errors_excluded"],
        "reference_p50": _num(run["reference_p50_median"]),
        "reference_p95": _num(run["reference_p95_max"]),
        "time_limits": ", ".join(f"{t:g}" for t in run["time_limits"]) or "n/a",
        "headroom": f"is {headroom[0]:.1f}x (`{headroom[1]}`)." if headroom else "is unknown.",
    }


def _comparison(f: dict[str, Any]) -> dict[str, Any]:
    """The figures set beside the published findings (AlphaCode, EvalPlus, reward hacking)."""
    mut, hackable = f["mutation"], f["hackable_tasks"]
    return {
        "alphacode_false_positives": _pct(ALPHACODE_FALSE_POSITIVE_RATE, 0),
        "weak_share": _pct(_share(len(f["weak_tests"]), mut["tasks_scored"])),
        "survival_agreement": (
            "They agree in direction only: on HumanEval's original tests, some wrong programs pass."
            if mut["surviving"]
            else "That no mutant survived does not contradict the published figure, for the same reason."
        ),
        "evalplus_drop_low": _pct(EVALPLUS_PASS_AT_K_DROP[0]),
        "evalplus_drop_high": _pct(EVALPLUS_PASS_AT_K_DROP[1]),
        "hackable_names": f" ({_names(hackable, 10)})" if hackable else "",
    }

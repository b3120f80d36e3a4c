"""The verdict's run inside a fresh session sandbox: the requested tests, run by pytest
with the verdict plugin (verdict_plugin), reported over a pipe.

What the sandbox holds by now is the pristine base with the episode's changes laid
over it, protected paths restored (the host filtered them out). The hidden tests are
never files: they travel in a spec file the plugin reads and deletes before pytest
imports any code of the tree, and are compiled from memory. A test that is not
reported as called and passed, whatever the reason (missing, skipped, deselected,
errored, the process killed or exited early), is failed.
"""

from __future__ import annotations

import os

from harness import lite, session_exec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

BOOT = (
    "import sys; sys.path.insert(0, '/'); from harness import verdict_plugin; del sys.path[0]; "
    "verdict_plugin.main({spec!r}, {fd})"
)
VERDICT_ENV = {
    **session_exec.STEP_ENV,
    # Entry-point plugins are code of whatever distributions lie on sys.path; a tree
    # may carry a .dist-info of its own. Only pytest's own plugins, and ours, load.
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
}


def run(message: dict[str, Any], repo: str) -> dict[str, Any]:
    tests = list(message["tests"])
    spec_path = f"/tmp/.verdict-{os.urandom(8).hex()}.json"
    # A report must carry this, so that bytes the tree's code writes to the pipe on its
    # own are no report (reading it out of the plugin's memory is the residual risk of
    # any in-process test runner: docs/sessions.md).
    nonce = os.urandom(16).hex()
    spec = {
        "nonce": nonce,
        "tests": tests,
        "hidden": message.get("hidden") or {},
        "repo": repo,
        "seed": int(message.get("seed", 0)),
    }
    fd = os.open(spec_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(lite.dumps(spec))
    report_read, report_write = os.pipe()
    argv = ["/usr/bin/python3", "-I", "-c", BOOT.format(spec=spec_path, fd=report_write)]
    result = session_exec.run_command(argv, cwd=repo, limits=message["limits"], timeout_s=float(message["timeout_s"]),
                                      extra_fds=(report_write,), env=VERDICT_ENV, collect_fd=report_read)  # fmt: skip
    os.close(report_read)
    try:
        os.unlink(spec_path)  # the plugin deletes it first thing; a run that died before may not have
    except FileNotFoundError:
        pass
    report = _parse(result.pop("collected"), nonce)
    outcomes = {}
    for test in tests:
        entry = (report or {}).get("reports", {}).get(test)
        if entry is None:
            outcomes[test] = {"outcome": "failed", "message": "the test did not run to a report"}
        elif not entry.get("called") and entry.get("outcome") == "passed":
            outcomes[test] = {"outcome": "failed", "message": "the test was never called"}
        else:
            outcomes[test] = {"outcome": entry["outcome"], "message": entry.get("message", "")[:2000]}
    return {"op": "verdict", "outcomes": outcomes, "report_complete": bool(report and report.get("finished")),
            "collect_errors": (report or {}).get("collect_errors", [])[:20], **result}  # fmt: skip


def _parse(data: bytes | None, nonce: str) -> dict[str, Any] | None:
    """The plugin's one report, or None when the process wrote none, or more than one, or
    something else: what ran in the pytest process is the episode's code, so a missing or
    mangled report fails every test rather than trusting any part of it."""
    if not data:
        return None
    try:
        report = lite.loads(data)
    except ValueError:
        return None
    if not isinstance(report, dict) or report.get("nonce") != nonce or not isinstance(report.get("reports"), dict):
        return None
    return report

"""PID 1 of an agent session's sandbox: lays out the working tree, runs each step the
host sends, reports what it did, and kills whatever the step left running.

The host sends frames on fd 0 and reads answers on fd 1:
- `init` {changes, copy_base?, quota_bytes?}: copy the prepared base (/base, read-only)
  into the session's tree (/repo, a size-bounded tmpfs), lay a fork's changes over it,
  answer the listing. With `copy_base` false /repo already holds the base (a Docker
  session's image: sessions/docker_images.py) and nothing is copied; `quota_bytes`
  asks for the tree's size to be checked after every step, where no tmpfs bounds it;
- `step` {action, limits, timeout_s}: one action (bash, read_file, write_file, edit,
  run_tests), answered by an observation;
- `export` {max_bytes}: the episode's changes against the base, for a fork or a verdict;
- `apply` {changes}: a fork's changes laid over a spare's tree (sessions/spares.py);
- `verdict` {...}: run the given tests with the verdict's pytest plugin (session_verdict);
- `exit`.
No frame is read while a step runs, and every process a step started is dead before
its observation is sent: between steps, nothing in the sandbox moves.
"""

from __future__ import annotations

import errno
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from harness import lite, protocol, session_exec, session_tree  # noqa: E402
from harness.version import harness_version  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

IN_FD, OUT_FD = 0, 1
BASE, REPO = "/base", "/repo"
# File actions may touch the tree and the sandbox's /tmp, nothing else (a link in the
# tree pointing at /proc/self/mem would otherwise have PID 1 write into itself).
WRITABLE_ROOTS = (REPO, "/tmp")
PR_SET_DUMPABLE = 4
ACTIONS = ("bash", "read_file", "write_file", "edit", "run_tests")


class ActionRefused(Exception):
    """An action the supervisor will not do as asked: its observation says why."""


class Session:
    def __init__(self) -> None:
        self.tree: dict[str, Any] = {}
        self.pristine: dict[str, Any] = {}
        self.steps = 0
        self.quota_bytes = 0

    # -- init ----------------------------------------------------------------------------------

    def init(self, message: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        if message.get("copy_base", True):
            try:
                # In this process, not by `cp -a`: an exec would cost more than the copy.
                session_tree.copy_tree(BASE, REPO)
            except OSError as exc:
                return {"op": "init_failed", "message": f"copying the base failed: {exc}"}
        self.quota_bytes = int(message.get("quota_bytes") or 0)
        # What the tree is while it is a plain copy of the base: exports skip what it still holds.
        self.pristine = session_tree.snapshot(REPO)
        changes = message.get("changes") or []
        try:
            session_tree.apply_changes(REPO, changes)
        except (OSError, ValueError, KeyError) as exc:
            return {"op": "init_failed", "message": f"laying the changes down failed: {exc}"}
        self.tree = session_tree.snapshot(REPO) if changes else self.pristine
        return {"op": "initialised", "cwd": REPO, "listing": session_tree.listing(self.tree),
                "elapsed_s": round(time.monotonic() - started, 6)}  # fmt: skip

    def apply(self, message: dict[str, Any]) -> dict[str, Any]:
        """A fork's changes over a spare's untouched tree (one laid out by `init` earlier,
        before any step ran in it)."""
        if self.steps:
            return {"op": "init_failed", "message": "changes go only into a tree no step has touched"}
        try:
            session_tree.apply_changes(REPO, message.get("changes") or [])
        except (OSError, ValueError, KeyError) as exc:
            return {"op": "init_failed", "message": f"laying the changes down failed: {exc}"}
        self.tree = session_tree.snapshot(REPO)
        return {"op": "initialised", "cwd": REPO, "listing": session_tree.listing(self.tree), "elapsed_s": 0.0}

    # -- steps ---------------------------------------------------------------------------------

    def step(self, message: dict[str, Any]) -> dict[str, Any]:
        action = message.get("action") or {}
        limits = message["limits"]
        timeout_s = float(message["timeout_s"])
        kind = action.get("kind")
        self.steps += 1
        try:
            if kind == "bash":
                observation = self._bash(action, limits, timeout_s)
            elif kind == "run_tests":
                observation = self._run_tests(action, limits, timeout_s)
            elif kind == "read_file":
                observation = self._read_file(action, limits)
            elif kind == "write_file":
                observation = self._write_file(action, limits)
            elif kind == "edit":
                observation = self._edit(action, limits)
            else:
                raise ActionRefused(f"unknown action kind {kind!r}; one of {', '.join(ACTIONS)}")
        except ActionRefused as exc:
            observation = _quick(stderr=str(exc) + "\n", exit_code=2)
        try:
            # One walk for the files changed and, where no tmpfs bounds the tree, its size.
            after, used = session_tree.scan(REPO, measure=bool(self.quota_bytes))
            observation["files_changed"] = session_tree.step_changes(REPO, self.tree, after)
            self.tree = after
        except session_tree.TreeTooLarge as exc:
            observation["files_changed"] = []
            observation["tree_error"] = str(exc)
            used = session_tree.usage(REPO) if self.quota_bytes else 0
        if self.quota_bytes and used > self.quota_bytes:
            # Measured after the step, not refused during it (nothing but a sized
            # filesystem can): the session takes no further step (sessions/session.py).
            observation["tree_full"] = True
            observation["tree_error"] = f"the tree holds {used} bytes, over its limit of {self.quota_bytes}"
        observation["op"] = "observation"
        return observation

    def _bash(self, action: dict[str, Any], limits: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        command = action.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ActionRefused("bash needs a non-empty `command` string")
        return session_exec.run_command([session_exec.SHELL, "-c", command], cwd=REPO, limits=limits,
                                        timeout_s=timeout_s)  # fmt: skip

    def _run_tests(self, action: dict[str, Any], limits: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        tests = action.get("tests") or []
        if not isinstance(tests, list) or not all(isinstance(t, str) and t and not t.startswith("-") for t in tests):
            raise ActionRefused("run_tests takes `tests`: a list of test ids (path or path::name)")
        argv = ["/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
        return session_exec.run_command(argv, cwd=REPO, limits=limits, timeout_s=timeout_s)

    def _read_file(self, action: dict[str, Any], limits: dict[str, Any]) -> dict[str, Any]:
        path = _resolve(action.get("path"), must_exist=True)
        if not os.path.isfile(path):
            raise ActionRefused(f"{action.get('path')} is not a regular file")
        capture = session_exec.Capture(int(limits["output_bytes"]))
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                capture.add(chunk)
        return _quick(stdout=capture.text(), stdout_bytes=capture.total)

    def _write_file(self, action: dict[str, Any], limits: dict[str, Any]) -> dict[str, Any]:
        content = action.get("content")
        if not isinstance(content, str):
            raise ActionRefused("write_file needs `content`, a string")
        data = content.encode("utf-8")
        if len(data) > int(limits["file_bytes"]):
            raise ActionRefused(f"{len(data)} bytes is over the file limit of {limits['file_bytes']}")
        path = _resolve(action.get("path"), must_exist=False)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError as exc:
            raise ActionRefused(f"cannot make the directories of {action['path']}: {exc.strerror}") from exc
        _write(path, data)
        return _quick(stdout=f"wrote {len(data)} bytes to {action['path']}\n")

    def _edit(self, action: dict[str, Any], limits: dict[str, Any]) -> dict[str, Any]:
        old, new = action.get("old"), action.get("new")
        if not isinstance(old, str) or not old or not isinstance(new, str):
            raise ActionRefused("edit needs `old` (a non-empty string) and `new` (a string)")
        path = _resolve(action.get("path"), must_exist=True)
        if not os.path.isfile(path):
            raise ActionRefused(f"{action.get('path')} is not a regular file")
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", "surrogateescape")
        count = text.count(old)
        if count != 1:
            raise ActionRefused(f"`old` must match exactly once in {action['path']}; it matched {count} times")
        data = text.replace(old, new, 1).encode("utf-8", "surrogateescape")
        if len(data) > int(limits["file_bytes"]):
            raise ActionRefused(f"the edited file would be {len(data)} bytes, over the limit of {limits['file_bytes']}")
        _write(path, data)
        return _quick(stdout=f"edited {action['path']}\n")

    # -- export ----------------------------------------------------------------------------------

    def export(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            changes = session_tree.changes_against(BASE, REPO, max_bytes=int(message["max_bytes"]),
                                                   pristine=self.pristine)  # fmt: skip
        except session_tree.TreeTooLarge as exc:
            return {"op": "export_failed", "message": str(exc)}
        return {"op": "changes", "changes": changes}


def _quick(
    *, stdout: str = "", stderr: str = "", exit_code: int = 0, stdout_bytes: int | None = None
) -> dict[str, Any]:
    """The observation of an action the supervisor did itself, with no process."""
    return {"stdout": stdout, "stderr": stderr, "stdout_bytes": len(stdout.encode()) if stdout_bytes is None
            else stdout_bytes, "stderr_bytes": len(stderr.encode()), "exit_code": exit_code, "signal": None,
            "timed_out": False, "elapsed_s": 0.0, "cpu_s": 0.0, "peak_memory_kb": 0,
            "cpu_exceeded": False}  # fmt: skip


def _resolve(path: Any, *, must_exist: bool) -> str:
    try:
        joined = (
            session_tree.safe_join(REPO, path) if not (isinstance(path, str) and path.startswith("/tmp/")) else path
        )
    except ValueError as exc:
        raise ActionRefused(str(exc)) from exc
    real = os.path.realpath(joined)
    if not any(real == root or real.startswith(root + "/") for root in WRITABLE_ROOTS):
        raise ActionRefused(f"{path} leads outside the repository (to {real})")
    if must_exist and not os.path.exists(real):
        raise ActionRefused(f"{path}: no such file")
    return real


def _write(path: str, data: bytes) -> None:
    mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o644
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    except OSError as exc:
        raise ActionRefused(f"cannot write {path}: {os.strerror(exc.errno or errno.EIO)}") from exc
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise ActionRefused(f"writing {path} failed: {os.strerror(exc.errno or errno.EIO)}") from exc
    finally:
        os.close(fd)


def main() -> None:
    lite.prctl(PR_SET_DUMPABLE, 0)  # no ptrace, no /proc/1/mem or fd of ours for the steps
    session = Session()
    protocol.send(OUT_FD, {"op": "ready", "harness": harness_version(), "pid": os.getpid(), "uid": os.getuid(),
                           "python": sys.version.split()[0]})  # fmt: skip
    while True:
        try:
            message = protocol.receive(IN_FD)
        except protocol.ChannelClosed:
            return
        op = message.get("op")
        try:
            if op == "init":
                answer = session.init(message)
            elif op == "step":
                answer = session.step(message)
            elif op == "export":
                answer = session.export(message)
            elif op == "apply":
                answer = session.apply(message)
            elif op == "verdict":
                from harness import session_verdict

                answer = session_verdict.run(message, REPO)
            elif op == "ping":
                answer = {"op": "pong", "steps": session.steps}
            elif op == "exit":
                return
            else:
                answer = {"op": "error", "message": f"unknown op {op!r}"}
        except Exception:  # a fault of the supervisor's own: reported, never a silent hang
            import traceback

            session_exec.kill_all()
            answer = {"op": "error", "message": traceback.format_exc()[-4000:]}
        protocol.send(OUT_FD, answer)


def entry() -> None:
    """What a session's sandbox starts: python3 ... -c "from harness.session_supervisor import entry; entry()"."""
    try:
        main()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise

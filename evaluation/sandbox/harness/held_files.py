"""Built programs a warm sandbox keeps between runs, so a compiled language's program
crosses into the sandbox once, not with every run (program.py lays it out per run).

The host (base.SupervisorSandbox) knows what it has sent to this sandbox: in a run's
`program` it sends the files this sandbox has not had in `files`, names the ones to
keep in `keep` (by SHA-256 of their base64 text, `digests`), and refers to those it
kept before in `held` ({name: digest}). They live in the supervisor's memory, never in
the zygote's (which forks the solution processes) nor on the scratch, which every run
wipes. The host bounds what it asks to keep (HELD_BYTES), so this holds no more.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

_held: dict[str, str] = {}


class NotHeld(Exception):
    """The host referred to a file this sandbox does not hold: a fault of ours."""


def resolve(program: dict[str, Any]) -> None:
    """Fill `program["files"]` in place from what is held, and keep what is to be kept."""
    files = program.setdefault("files", {})
    digests = program.get("digests") or {}
    for name in program.pop("keep", None) or ():
        if name in files and name in digests:
            _held[str(digests[name])] = files[name]
    for name, digest in (program.pop("held", None) or {}).items():
        data = _held.get(str(digest))
        if data is None:
            raise NotHeld(f"the host refers to {name} ({str(digest)[:12]}), which this sandbox does not hold")
        files[name] = data

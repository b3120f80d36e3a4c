"""Built programs a warm sandbox keeps between runs, so a compiled language's program
crosses into the sandbox once, not with every run (program.py lays it out per run).

The host (base.SupervisorSandbox) knows what it has sent to this sandbox: in a run's
`program` it sends the files this sandbox has not had in `files`, names the ones to
keep in `keep` (by SHA-256 of their base64 text, `digests`), and refers to those it
kept before in `held` ({name: digest}). They live in the supervisor's memory, never in
the zygote's (which forks the solution processes) nor on the scratch, which every run
wipes. The host bounds what it asks to keep (HELD_BYTES), so this holds no more.

They are kept decoded (a run lays them out as bytes: decoding a 1.3 MB Go program's
base64 each run cost about as much as running it), and a held built program that
solution processes exec is kept as a sealed in-memory copy too (program.py:
held_executable), so a run neither writes it to the scratch nor copies it again.
"""

from __future__ import annotations

import binascii

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

_held: dict[str, bytes] = {}  # or a read-only mapping of its sealed copy (keep_sealed)
_sealed: dict[str, int] = {}  # digest -> a sealed memfd of that held file, made on first exec


class NotHeld(Exception):
    """The host referred to a file this sandbox does not hold: a fault of ours."""


def resolve(program: dict[str, Any]) -> None:
    """Fill `program["files"]` in place from what is held, and keep what is to be kept."""
    files = program.setdefault("files", {})
    digests = program.get("digests") or {}
    for name in program.pop("keep", None) or ():
        if name in files and name in digests:
            files[name] = _held[str(digests[name])] = binascii.a2b_base64(files[name])
    for name, digest in (program.pop("held", None) or {}).items():
        data = _held.get(str(digest))
        if data is None:
            raise NotHeld(f"the host refers to {name} ({str(digest)[:12]}), which this sandbox does not hold")
        files[name] = data


def held(digest: str) -> bytes | None:
    return _held.get(digest)


def sealed(digest: str) -> int | None:
    """The sealed copy of a held file made before (the caller dups it: this one stays)."""
    return _sealed.get(digest)


def keep_sealed(digest: str, fd: int) -> None:
    """Keep the sealed copy, and hold its bytes through it (a read-only mapping of the
    same pages) rather than beside it: the sandbox holds each program once."""
    import mmap

    size = len(_held[digest])
    _sealed[digest] = fd
    if size:
        _held[digest] = mmap.mmap(fd, size, prot=mmap.PROT_READ)  # type: ignore[assignment]

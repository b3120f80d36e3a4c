"""The harness's version: a SHA-256 over its modules, computed inside the sandbox the
same way the host computes it (harness_files.harness_version), so a greeting proves
which harness answered."""

from __future__ import annotations

import os

HERE = os.path.dirname(os.path.abspath(__file__))
_version: list[str] = []  # computed once a process (a template computes it for all its sandboxes)


def harness_version() -> str:
    if _version:
        return _version[0]
    try:
        from _sha256 import sha256  # the built-in one: hashlib would load OpenSSL (~3 ms)
    except ImportError:
        from hashlib import sha256
    digest = sha256()
    # The package's modules, as the host lists them (harness_files.FILES): the same digest.
    for name in sorted(n for n in os.listdir(HERE) if n.endswith(".py")):
        with open(os.path.join(HERE, name), "rb") as handle:
            digest.update(name.encode() + b"\0" + handle.read() + b"\0")
    _version.append(digest.hexdigest())
    return _version[0]

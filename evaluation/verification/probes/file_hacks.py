"""Probes that leave files behind for whatever runs after them: interpreter hooks
(sitecustomize, usercustomize, a .pth file) that force exit status 0, and forged result
files that claim success. Both families use them, each with its own tail (the entry point
for kinds that call a function, an echo program for stdio)."""

from __future__ import annotations

from evaluation.verification.probes.render import Probe, probe


def sitecustomize_and_pth(tail: str, ep: str = "") -> Probe:
    """The hook-planting probe, its code followed by the template `tail`."""
    return probe(
        "sitecustomize_and_pth",
        "Writes sitecustomize.py, usercustomize.py and a .pth file that force exit status 0 into the working "
        "directory, HOME, /tmp and the user site directory, for any interpreter started there later.",
        "files/sitecustomize_and_pth",
        tail,
        ep=ep,
    )


def forge_result_files(tail: str, ep: str = "") -> Probe:
    """The result-forging probe, its code followed by the template `tail`."""
    return probe(
        "forge_result_files",
        "Writes result files that claim success (result.json, report.json, a JUnit XML with no failures, an "
        "empty pytest lastfailed cache) wherever a harness might read them.",
        "files/forge_result_files",
        tail,
        ep=ep,
    )

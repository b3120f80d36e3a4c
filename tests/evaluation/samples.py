"""A small task the pipeline tests share: clamp x into [low, high]."""

from __future__ import annotations

CLAMP = """\
def clamp(x, low, high):
    if x < low:
        return low
    if x > high:
        return high
    return x
"""
# Catches every way clamp can go wrong in one place: below, inside, at and above the bounds.
STRONG_CLAMP_TESTS = [f"assert clamp({v}, 0, 10) == {min(max(v, 0), 10)}" for v in (-5, -1, 0, 1, 5, 9, 10, 11, 50)]
NO_UPPER_BOUND = "def clamp(x, low, high):\n    return max(low, x)\n"

"""A generated input and the reference's answer to it, written as a hidden test of the
version's suite kind.

The sandbox sends arguments and answers as Python literal sources; they are read back
with ast.literal_eval (never evaluated), so a test is only ever made of plain values.
A float anywhere in the answer is compared within 1e-6 of max(1, |expected|), and
everything else with ==: exactly the relation the sandbox told mutants apart by
(explore_values.same), so a proven survivor is one its test fails, and a correct
solution that sums in another order does not.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from evaluation.sandbox.harness.explore_values import REL_TOL


class NotATest(ValueError):
    """The input or answer cannot be written as a test (not a literal, or a shape the
    suite kind cannot compare with a tolerance)."""


def literal(source: str, what: str) -> Any:
    try:
        return ast.literal_eval(source)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise NotATest(f"the {what} is not a Python literal: {exc}") from None


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_has_float(item) for item in value)
    if isinstance(value, dict):
        return any(_has_float(k) or _has_float(v) for k, v in value.items())
    return isinstance(value, complex)


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(_finite(item) for item in value)
    if isinstance(value, dict):
        return all(_finite(k) and _finite(v) for k, v in value.items())
    return True


def _call(name: str, args: tuple, kwargs: dict) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


_CLOSE = f'''def _close(got, want):
    """Equal, floats within a relative {REL_TOL:g} (containers element by element)."""
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return abs(got - want) <= {REL_TOL!r} * max(1.0, abs(want))
    if isinstance(want, (list, tuple)) and type(got) is type(want) and len(got) == len(want):
        return all(_close(g, w) for g, w in zip(got, want))
    if isinstance(want, dict) and isinstance(got, dict) and set(got) == set(want):
        return all(_close(got[k], want[k]) for k in want)
    return got == want
'''


def hidden_test(*, suite_kind: str, entry_point: str, args: str, kwargs: str, expected: str, note: str) -> str:
    """The test, as the suite kind stores one. `note` says where it came from (a comment
    in a check module; assertions are one statement, so there it goes nowhere)."""
    arg_values, kwarg_values, want = (
        literal(args, "argument tuple"),
        literal(kwargs, "keyword arguments"),
        literal(expected, "expected answer"),
    )
    if not isinstance(arg_values, tuple) or not isinstance(kwarg_values, dict):
        raise NotATest("the arguments are not a tuple and a dict")
    if not (_finite(arg_values) and _finite(kwarg_values) and _finite(want)):
        raise NotATest("an argument or the answer is not finite (nan or inf)")
    if any(not isinstance(k, str) or not k.isidentifier() for k in kwarg_values):
        raise NotATest("a keyword argument's name is not an identifier")
    if isinstance(want, complex) or (_has_float(want) and isinstance(want, (set, frozenset))):
        raise NotATest("the answer holds complex numbers or floats in a set: no tolerance fits")
    fuzzy = _has_float(want)
    if suite_kind == "check_function":
        call = _call("candidate", arg_values, kwarg_values)
        compare = f"_close(got, {want!r})" if fuzzy else f"got == {want!r}"
        body = (
            f"def check(candidate):\n    # {note}\n    got = {call}\n"
            f"    assert {compare}, {call[:300]!r} + ' returned ' + repr(got)[:300]\n"
        )
        test = (_CLOSE + "\n\n" + body) if fuzzy else body
    elif suite_kind == "assertions":
        call = _call(entry_point, arg_values, kwarg_values)
        if fuzzy and not isinstance(want, float):
            raise NotATest("an assertion compares one float with a tolerance, not floats inside a container")
        test = f"assert abs({call} - {want!r}) <= {REL_TOL!r} * max(1.0, abs({want!r}))" if fuzzy else (
            f"assert {call} == {want!r}"
        )  # fmt: skip
    else:
        raise NotATest(f"suite kind {suite_kind!r} has no generated tests")
    compile(test, "<generated test>", "exec")  # a literal's repr always parses; this says so
    return test

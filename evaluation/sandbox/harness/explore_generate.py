"""New inputs for an exploration (explore.py), made from the ones the task's own
tests pass: type-aware mutation of one or two arguments, and crossover between
captured inputs of the same shape; from the entry point's annotations where no
test passes a value for a parameter (explore_annotations.py). Deterministic: one random.Random, seeded from
the run's seed and the captured inputs, and nothing else (no clock, no hash of a
str: those vary with PYTHONHASHSEED).

Sizes stay small (lists of at most MAX_ITEMS, strings of at most MAX_CHARS, ints
mostly in the range the tests use), so that thousands of calls fit in a run.
Every function returns new values and never changes the ones it was given: the
captured inputs are shared by every mutation made from them.
"""

from __future__ import annotations

from .explore_annotations import MAX_DEPTH, NOTHING, Param, from_spec
from .explore_values import weight

TYPE_CHECKING = False  # typing costs ~3 ms to import: a cold sandbox starts without it
if TYPE_CHECKING:
    from typing import Any

MAX_ITEMS = 20
MAX_CHARS = 40
# A captured input bigger than this (a test's stress input) is compared, never mutated.
MAX_BASE_SIZE = 400
BOUNDARIES = (2**31 - 1, -(2**31), 2**31, 2**63 - 1, -(2**63))
DEFAULT_ALPHABET = " ,.-_!019ABZabcxyz"


def extents(value: Any) -> tuple[int, int, int, bool]:
    """(largest |int|, longest list, longest string, whether an int is negative)
    anywhere in a value."""
    largest = longest = chars = 0
    negative = False
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is int:
            largest = max(largest, min(abs(item), 10**18))
            negative = negative or item < 0
        elif kind is str or kind is bytes:
            chars = max(chars, len(item))
        elif isinstance(item, (list, tuple, set, frozenset)):
            longest = max(longest, len(item))
            stack.extend(item)
        elif isinstance(item, dict):
            longest = max(longest, len(item))
            stack.extend(item.keys())
            stack.extend(item.values())
    return largest, longest, chars, negative


def input_extents(inputs: list[tuple[tuple, dict]]) -> tuple[int, int, int, bool]:
    """extents() over the argument values of inputs (not their args tuples)."""
    found = [extents(value) for args, kwargs in inputs for value in (*args, *kwargs.values())]
    return tuple(max((f[i] for f in found), default=0) for i in range(4))  # type: ignore[return-value]


class Pools:
    """Values of each type in the captured inputs, for mutations to draw on, and the
    sizes mutations keep to: near the tests' own, smaller after the reference timed
    out on a bigger one (a parameter that is a size, or a loop count)."""

    def __init__(self, inputs: list[tuple[tuple, dict]]) -> None:
        self.by_type: dict[type, list[Any]] = {}
        chars: set[str] = set()
        words: set[str] = set()
        self.seen = input_extents(inputs)
        self.int_bound = max(64, min(4 * self.seen[0], 10**12))
        self.max_items, self.max_chars = MAX_ITEMS, MAX_CHARS
        self.boundaries = True
        self.negatives = True
        for args, kwargs in inputs:
            stack = [*args, *kwargs.values()]
            while stack:
                item = stack.pop()
                kind = type(item)
                found = self.by_type.setdefault(kind, [])
                if len(found) < 200 and (kind not in (str, list, dict, tuple) or weight(item)[0] < 60):
                    found.append(item)
                if kind is str:
                    chars.update(item[:200])
                    words.update(item[:400].split())
                elif isinstance(item, (list, tuple, set, frozenset)):
                    stack.extend(list(item)[:50])
                elif isinstance(item, dict):
                    stack.extend(list(item.values())[:50])
                    stack.extend(list(item.keys())[:50])
        self.alphabet = "".join(sorted(chars))[:96] or DEFAULT_ALPHABET
        self.words = sorted(words)[:200]  # sorted: a set's order follows the hash seed

    def timed_out(self, candidate: tuple[tuple, dict]) -> None:
        """The reference ran past its budget on `candidate`: whatever of it is bigger
        than the tests' own inputs is halved for the inputs to come, and a negative
        number the tests never pass is not made again."""
        largest, longest, chars, negative = input_extents([candidate])
        if negative and not self.seen[3]:  # the tests pass no negative number: a count, say
            self.negatives = False
        if largest > self.seen[0]:
            self.int_bound = min(self.int_bound, max(self.seen[0], largest // 2, 1))
            self.boundaries = False
        if longest > self.seen[1]:
            self.max_items = min(self.max_items, max(self.seen[1], longest // 2, 1))
        if chars > self.seen[2]:
            self.max_chars = min(self.max_chars, max(self.seen[2], chars // 2, 1))

    def pick(self, rng: Any, kind: type, default: Any) -> Any:
        found = self.by_type.get(kind)
        return rng.choice(found) if found else default


def stable_hash(keys: list[str]) -> int:
    """A 64-bit digest of the captured inputs' keys, the same on every Python."""
    try:
        from _sha256 import sha256  # the built-in one: hashlib would load OpenSSL (~3 ms)
    except ImportError:
        from hashlib import sha256
    digest = sha256()
    for key in sorted(keys):
        digest.update(key.encode("utf-8", "surrogatepass") + b"\0")
    return int.from_bytes(digest.digest()[:8], "big")


# -- one value ---------------------------------------------------------------------------------


def mutate(value: Any, rng: Any, pools: Pools, depth: int = 0) -> Any:
    """A variant of `value` of the same type (None and types it does not know stay)."""
    kind = type(value)
    if kind is bool:
        return not value if rng.random() < 0.8 else pools.pick(rng, bool, value)
    if kind is int:
        return _int(value, rng, pools)
    if kind is float:
        return _float(value, rng, pools)
    if kind is str:
        return _str(value, rng, pools)
    if kind is bytes:
        return _str(value.decode("latin-1"), rng, pools).encode("latin-1", "replace")
    if kind is list:
        return _list(value, rng, pools, depth)
    if kind is tuple:
        return _tuple(value, rng, pools, depth)
    if kind is dict:
        return _dict(value, rng, pools, depth)
    if kind is set or kind is frozenset:
        items = _list(list(value), rng, pools, depth)
        try:
            return kind(items)
        except TypeError:
            return value
    return value


def _int(value: int, rng: Any, pools: Pools) -> int:
    if pools.boundaries and rng.random() < 0.03:
        return rng.choice(BOUNDARIES)
    options = (
        lambda: value + 1, lambda: value - 1, lambda: value + rng.randint(-10, 10), lambda: 0, lambda: -1,
        lambda: 1, lambda: -value, lambda: value * 2, lambda: value // 2, lambda: rng.randint(-100, 100),
        lambda: pools.pick(rng, int, value + 2), lambda: 10 ** rng.randint(1, 3), lambda: rng.randint(0, 10),
    )  # fmt: skip
    result = rng.choice(options)()
    if abs(result) > pools.int_bound:  # the reference is to stay fast: back into the tests' range
        result = rng.randint(-pools.int_bound, pools.int_bound)
    return result if pools.negatives else abs(result)


def _float(value: float, rng: Any, pools: Pools) -> float:
    if value != value or value in (float("inf"), float("-inf")):
        return rng.choice((0.0, 1.5, -2.25))
    options = (
        lambda: value + rng.uniform(-1.0, 1.0), lambda: value * rng.uniform(0.5, 2.0), lambda: 0.0, lambda: -value,
        lambda: value / 2, lambda: float(round(value)), lambda: value + 0.5, lambda: pools.pick(rng, float, 1.0),
        lambda: value + 1e-9, lambda: round(rng.uniform(-10.0, 10.0), rng.randint(0, 3)), lambda: -1.0,
    )  # fmt: skip
    result = float(rng.choice(options)())
    return result if abs(result) < 1e12 else 0.0


def _words(value: str, rng: Any, pools: Pools) -> str:
    """A sentence changed a word at a time: a string of words ("three one five") is
    mostly valid only as words, which a change of one character breaks."""
    words = value.split()
    n = len(words)
    pick = (lambda: rng.choice(pools.words)) if pools.words else (lambda: rng.choice(words))
    i = rng.randrange(n)
    options = (
        lambda: [*words[:i], pick(), *words[i:]], lambda: words[:i] + words[i + 1 :],
        lambda: [*words[:i], pick(), *words[i + 1 :]], lambda: [*words[:i], words[i], *words[i:]],
        lambda: rng.sample(words, n), lambda: words[::-1], lambda: [pick() for _ in range(rng.randint(1, 6))],
    )  # fmt: skip
    return " ".join(rng.choice(options)())


def _str(value: str, rng: Any, pools: Pools) -> str:
    if value.strip() and (" " in value.strip() or value in pools.words) and rng.random() < 0.5:
        return _words(value, rng, pools)[: pools.max_chars]
    alphabet = pools.alphabet
    at = rng.randint(0, len(value))

    def replace() -> str:
        if not value:
            return rng.choice(alphabet)
        i = rng.randrange(len(value))
        return value[:i] + rng.choice(alphabet) + value[i + 1 :]

    def delete() -> str:
        if not value:
            return value
        i = rng.randrange(len(value))
        return value[:i] + value[i + 1 :]

    def shuffle() -> str:
        chars = list(value)
        rng.shuffle(chars)
        return "".join(chars)

    options = (
        lambda: value[:at] + rng.choice(alphabet) + value[at:], delete, replace, value.swapcase, lambda: value[::-1],
        lambda: "", lambda: value + value, lambda: value[:at], lambda: value[at:], lambda: pools.pick(rng, str, "a"),
        value.upper, value.lower, shuffle, lambda: value[:at] + " " + value[at:],
        lambda: "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))),
    )  # fmt: skip
    return rng.choice(options)()[: pools.max_chars]


def _like(items: list[Any], rng: Any, pools: Pools, depth: int) -> Any:
    """A new element for a container: a variant of one it holds, or a captured value
    of the same type."""
    if not items:
        for kind in (int, str, float):
            if pools.by_type.get(kind):
                return pools.pick(rng, kind, 0)
        return rng.randint(-5, 5)
    model = rng.choice(items)
    if rng.random() < 0.3:
        return pools.pick(rng, type(model), model)
    return mutate(model, rng, pools, depth + 1) if depth < MAX_DEPTH else model


def _sorted(items: list[Any], reverse: bool) -> list[Any]:
    try:
        return sorted(items, reverse=reverse)
    except TypeError:  # not comparable: no order to sort by
        return list(reversed(items))


def _list(value: list[Any], rng: Any, pools: Pools, depth: int) -> list[Any]:
    n = len(value)

    def grow() -> list[Any]:
        i = rng.randint(0, n)
        return [*value[:i], _like(value, rng, pools, depth), *value[i:]]

    def shrink() -> list[Any]:
        if not n:
            return value
        i = rng.randrange(n)
        return value[:i] + value[i + 1 :]

    def shuffle() -> list[Any]:
        items = list(value)
        rng.shuffle(items)
        return items

    def duplicate() -> list[Any]:
        if not n:
            return value
        i, j = rng.randrange(n), rng.randint(0, n)
        return [*value[:j], value[i], *value[j:]]

    def element() -> list[Any]:
        if not n or depth >= MAX_DEPTH:
            return grow()
        i = rng.randrange(n)
        return [*value[:i], mutate(value[i], rng, pools, depth + 1), *value[i + 1 :]]

    def halve() -> list[Any]:
        return value[: n // 2] if rng.random() < 0.5 else value[n // 2 :]

    options = (
        grow, grow, shrink, lambda: [], shuffle, duplicate, element, element, element,
        lambda: _sorted(value, False), lambda: _sorted(value, True), lambda: value[::-1], halve,
        lambda: [_like(value, rng, pools, depth) for _ in range(rng.randint(1, 6))],
    )  # fmt: skip
    return rng.choice(options)()[: pools.max_items]


def _tuple(value: tuple, rng: Any, pools: Pools, depth: int) -> tuple:
    # A tuple is mostly a record of fixed shape: its parts change, its length rarely.
    if value and depth < MAX_DEPTH and rng.random() < 0.85:
        i = rng.randrange(len(value))
        return (*value[:i], mutate(value[i], rng, pools, depth + 1), *value[i + 1 :])
    return tuple(_list(list(value), rng, pools, depth))


def _dict(value: dict, rng: Any, pools: Pools, depth: int) -> dict:
    keys = list(value)
    roll = rng.random()
    result = dict(value)
    if roll < 0.3 or not keys:  # a key added
        key = _like(keys, rng, pools, depth)
        try:
            result[key] = _like(list(value.values()), rng, pools, depth)
        except TypeError:  # an unhashable key
            pass
    elif roll < 0.55:
        del result[rng.choice(keys)]
    elif roll < 0.9 and depth < MAX_DEPTH:
        key = rng.choice(keys)
        result[key] = mutate(value[key], rng, pools, depth + 1)
    else:
        result = {}
    return result if len(result) <= pools.max_items else value


# -- crossover -------------------------------------------------------------------------------


def _parts(value: Any, path: tuple, out: list[tuple[tuple, Any]], depth: int) -> None:
    """(path, part) for `value` and each container part inside it, paths of indexes
    and keys; bounded, in a fixed order."""
    out.append((path, value))
    if depth >= MAX_DEPTH or len(out) > 200:
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _parts(item, (*path, i), out, depth + 1)
    elif type(value) is dict:
        for key, item in value.items():
            _parts(item, (*path, key), out, depth + 1)


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if type(value) is dict:
        result = dict(value)
        result[head] = _replace(value[head], rest, new)
        return result
    items = list(value)
    items[head] = _replace(items[head], rest, new)
    return type(value)(items) if type(value) is tuple else items


def _shape(args: tuple, kwargs: dict) -> tuple:
    return (tuple(type(a) for a in args), tuple(sorted(kwargs)))


def crossover(base: tuple[tuple, dict], other: tuple[tuple, dict], rng: Any) -> tuple[tuple, dict] | None:
    """`base` with one part swapped for the part of `other` of the same type at the
    same argument (a whole argument, or a list's element, a dict's value...)."""
    if _shape(*base) != _shape(*other):
        return None
    args, kwargs = base
    positions = [*range(len(args)), *sorted(kwargs)]
    if not positions:
        return None
    where = rng.choice(positions)
    mine = args[where] if isinstance(where, int) else kwargs[where]
    theirs = other[0][where] if isinstance(where, int) else other[1][where]
    my_parts: list[tuple[tuple, Any]] = []
    their_parts: list[tuple[tuple, Any]] = []
    _parts(mine, (), my_parts, 0)
    _parts(theirs, (), their_parts, 0)
    path, part = rng.choice(my_parts)
    same_type = [p for _, p in their_parts if type(p) is type(part)]
    if not same_type:
        return None
    swapped = _replace(mine, path, rng.choice(same_type))
    if isinstance(where, int):
        return (*args[:where], swapped, *args[where + 1 :]), kwargs
    return args, {**kwargs, where: swapped}


# -- the generator -----------------------------------------------------------------------------


class Generator:
    """Candidate inputs, one at a time, from the captured inputs (and from the valid
    ones it made before, which the exploration hands back through `accept`)."""

    def __init__(self, rng: Any, captured: list[tuple[tuple, dict]], params: list[Param] | None) -> None:
        self.rng = rng
        self.bases = [c for c in captured if weight((c[0], c[1]))[0] <= MAX_BASE_SIZE]
        self.grown: list[tuple[tuple, dict]] = []
        self.pools = Pools(self.bases)
        self.params = params or []
        passed = {name for _, kwargs in captured for name in kwargs}
        most = max((len(args) for args, _ in captured), default=0)
        positional = [p for p in self.params if not p.keyword_only]
        passed.update(p.name for p in positional[:most])
        # Parameters no test passes a value for, that an annotation tells how to fill.
        self.unpassed = [p for p in self.params if p.name not in passed and p.spec is not None]

    def accept(self, candidate: tuple[tuple, dict]) -> None:
        if len(self.grown) < 500 and weight(candidate)[0] <= MAX_BASE_SIZE:
            self.grown.append(candidate)

    def fresh(self) -> tuple[tuple, dict] | None:
        """An input made from the annotations alone (when no test passes any)."""
        args, kwargs = [], {}
        for param in self.params:
            if param.has_default:
                continue
            value = from_spec(param.spec, self.rng, self.pools)
            if value is NOTHING:
                return None
            if param.keyword_only:
                kwargs[param.name] = value
            else:
                args.append(value)
        return tuple(args), kwargs

    def next(self) -> tuple[tuple, dict] | None:
        """A candidate input; None when there is nothing to make one from."""
        rng = self.rng
        if not self.bases and (not self.grown or rng.random() < 0.3):
            return self.fresh()
        if self.grown and (not self.bases or rng.random() < 0.3):
            base = rng.choice(self.grown)
        else:
            base = rng.choice(self.bases)
        roll = rng.random()
        if roll < 0.15 and len(self.bases) + len(self.grown) > 1:
            other = rng.choice(self.bases + self.grown)
            crossed = crossover(base, other, rng)
            if crossed is not None:
                return crossed
        if roll > 0.93 and self.unpassed:
            param = rng.choice(self.unpassed)
            value = from_spec(param.spec, rng, self.pools)
            if value is not NOTHING:
                return base[0], {**base[1], param.name: value}
        return self._mutated(base, 2 if rng.random() < 0.25 else 1)

    def _mutated(self, base: tuple[tuple, dict], times: int) -> tuple[tuple, dict]:
        args, kwargs = list(base[0]), dict(base[1])
        positions = [*range(len(args)), *sorted(kwargs)]
        for _ in range(times if positions else 0):
            where = self.rng.choice(positions)
            if isinstance(where, int):
                args[where] = mutate(args[where], self.rng, self.pools)
            else:
                kwargs[where] = mutate(kwargs[where], self.rng, self.pools)
        return tuple(args), kwargs

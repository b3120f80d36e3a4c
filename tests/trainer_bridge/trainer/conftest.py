"""One tiny model for the whole session: training its tokenizer and saving it costs
a second, loading it a fraction of that."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainer_bridge.trainer.tiny import make_tiny_model

SNIPPETS = [
    "def add(a, b):\n    return a + b\n",
    "def is_even(n):\n    return n % 2 == 0\n",
    "for i in range(10):\n    print(i)\n",
    "import math\nprint(math.sqrt(16))\n",
    "class Stack:\n    def __init__(self):\n        self.items = []\n",
    "def push(self, item):\n    self.items.append(item)\n",
    "assert add(2, 3) == 5\n",
    "assert is_even(4) is True\n",
    "result = [x * x for x in range(5)]\n",
    "with open('data.txt') as handle:\n    lines = handle.read().splitlines()\n",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "counts = {}\nfor word in words:\n    counts[word] = counts.get(word, 0) + 1\n",
    "try:\n    value = int(text)\nexcept ValueError:\n    value = 0\n",
    "def reverse(s):\n    return s[::-1]\n",
    "while left < right:\n    middle = (left + right) // 2\n",
    "print(sorted(names, key=len))\n",
    "def maximum(values):\n    best = values[0]\n    for v in values:\n        best = max(best, v)\n    return best\n",
    "total = sum(numbers) / len(numbers)\n",
]
SENTENCES = [
    "Write a function that adds two numbers.",
    "Return the reversed string.",
    "The quick brown fox jumps over the lazy dog.",
    "Your solution failed the following test.",
    "Fix the bug and try again.",
    "Given a list of integers, return the largest one.",
    "The function must run in linear time.",
    "Read the input from standard input and print the answer.",
    "Count how many times each word appears.",
    "A prime number has exactly two divisors.",
    "Sort the names by their length.",
    "The test expects an empty list when there is no input.",
    "Please explain your reasoning briefly.",
    "Check whether a number is even.",
    "Compute the n-th Fibonacci number.",
    "Binary search finds an item in a sorted list.",
]
TEXTS = SNIPPETS + SENTENCES
TINY_SHAPE = {"vocab_size": 400, "hidden_size": 32, "layers": 2, "heads": 4, "context": 512, "seed": 0}


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model(TEXTS, tmp_path_factory.mktemp("tiny") / "model", **TINY_SHAPE)


from tests.sessions_world import cache_root  # noqa: E402,F401 - environments the sandboxes reach

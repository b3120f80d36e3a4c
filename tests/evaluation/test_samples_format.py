"""The samples format: what is read, and the clear refusal of what is not."""

from __future__ import annotations

import ast
import gzip
import json

import pytest

from evaluation.difficulty.samples import SamplesError, _defines, extract_code, parse_samples, with_prompt
from tasks_app.datasets import humaneval_path

DATASET = humaneval_path()


def _jsonl(*rows: object) -> bytes:
    return "\n".join(json.dumps(r) if not isinstance(r, str) else r for r in rows).encode()


def test_lines_are_read_with_their_solver_and_ids():
    data = _jsonl(
        {"task_id": "HumanEval/0", "completion": "    return 1\n"},
        "",
        {"task_id": "HumanEval/0", "completion": "x", "solver": "m2", "sample_id": "a"},
        {"task_id": 7, "completion": "y", "sample_id": 3},
        {"task_id": "HumanEval/0", "completion": "z"},
    )
    samples = parse_samples(data)
    assert [(s.line, s.task_id, s.solver, s.sample_id) for s in samples] == [
        (1, "HumanEval/0", None, "0"),
        (3, "HumanEval/0", "m2", "a"),
        (4, "7", None, "3"),
        (5, "HumanEval/0", None, "1"),
    ]
    assert parse_samples(gzip.compress(data)) == samples


@pytest.mark.parametrize(
    ("data", "line", "reason"),
    [
        (b"", 0, "empty"),
        (b'{"task_id": "t", "completion": "x"}\n{"task_id": "t", "completion": ', 2, "not valid JSON"),
        (b'[1, 2]', 1, "expected a JSON object"),
        (b'{"completion": "x"}', 1, "`task_id` is missing"),
        (b'{"task_id": "t"}', 1, "`completion` is missing"),
        (b'{"task_id": "  ", "completion": "x"}', 1, "`task_id` is empty"),
        (b'{"task_id": "t", "completion": 5}', 1, "`completion` must be a string"),
        (b'{"task_id": "t", "completion": "x", "solver": ["a"]}', 1, "`solver` must be a string"),
        (b'{"task_id": "t", "completion": "x", "sample_id": "s"}\n'
         b'{"task_id": "t", "completion": "y", "sample_id": "s"}', 2, "repeats"),
        (b'{"task_id": "t", "completion": "ok"}\n{"task_id": "t", "completion": "\xff"}', 2, "not UTF-8"),
        (b"\x1f\x8b\x08\x00garbage", 0, "does not decompress"),
        (b'{"task_id": "t", "completion": "x", "solver": "evil\\nname"}', 1, "control characters"),
        (b'{"task_id": "t", "completion": "' + b"x" * 2_000_000 + b'"}', 1, "longer than 1000000 bytes"),
    ],
)  # fmt: skip
def test_a_bad_file_is_refused_at_its_first_bad_line(data, line, reason):
    with pytest.raises(SamplesError) as error:
        parse_samples(data)
    assert error.value.line == line and reason in str(error.value)
    assert str(error.value).startswith(f"line {line}: ") == bool(line)


def test_code_comes_from_the_first_fenced_block_or_the_whole_text():
    answer = "Here you go:\n```python\ndef f():\n    return 1\n```\nand more\n```\nother\n```"
    assert extract_code(answer) == "def f():\n    return 1\n"
    assert extract_code("```\nprint(1)\n```") == "print(1)\n"
    assert extract_code("def f():\n    return 2\n") == "def f():\n    return 2\n"
    assert extract_code("```python\ndef g(): pass") == "def g(): pass"  # an unclosed fence runs to the end
    assert extract_code("```") == "```"


def test_a_body_goes_behind_the_prompt_and_a_whole_program_stands_alone():
    prompt = 'def add(a, b):\n    """Sum."""\n'
    assert with_prompt("    return a + b\n", prompt=prompt, entry_point="add") == prompt + "    return a + b\n"
    whole = "def add(a, b):\n    return b + a\n"
    assert with_prompt(whole, prompt=prompt, entry_point="add") == whole
    assert with_prompt("print(1)\n", prompt="", entry_point="") == "print(1)\n"
    for defined in ("@cache\ndef add(a, b):\n    return a + b\n", "async def add(a, b):\n    return a\n",
                    "class add:\n    pass\n"):  # fmt: skip
        assert with_prompt(defined, prompt=prompt, entry_point="add") == defined
    # Only a top-level definition counts: not one in a string, nor a nested one, nor another name.
    for body in ('    s = """\ndef add(x):\n"""\n    return a + b\n', "    def add_one(x):\n        return x\n",
                 "def adder(a, b):\n    return a\n"):  # fmt: skip
        assert with_prompt(body, prompt=prompt, entry_point="add") == prompt + body


def _defines_by_parsing(code: str, name: str) -> bool:
    """The definition of `_defines`: what the parser says, and no for code that does not parse."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name
               for n in tree.body)  # fmt: skip


def test_telling_a_whole_program_from_a_body_agrees_with_the_parser():
    """The shortcut that skips the parse (most whole programs) answers as the parser
    would, on every HumanEval task's programs and bodies and on the tricky cases."""
    with gzip.open(DATASET, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    cases = []
    for row in rows:
        name, whole = row["entry_point"], row["prompt"] + row["canonical_solution"]
        renamed = whole.replace(f"def {name}", f"def {name}_v2")
        cases += [(whole, name), (row["canonical_solution"], name), ("import math\n\n" + whole, name),
                  ("# a comment\n\n" + whole, name), (renamed, name)]  # fmt: skip
    tricky = [
        's = """\ndef add(x):\n"""\n',  # inside a triple-quoted string
        "s = '''\ndef add(x):\n'''\n",
        's = "one \\\ndef add(x): pass"\n',  # inside a string continued by a backslash
        "x = 1 + \\\n2\ndef add(x):\n    return x\n",  # a backslash-continued line before a real one
        "    return a\ndef add(a, b):\n    return b\n",  # a body that defines it again further down
        "\n  # indented comment\n    return a\ndef add(a, b):\n    pass\n",
        "# comment\n\ndef add(a, b):\n    return a\n",
        "def add(a, b):\n    return a\n",
        "async  def add(a):\n    pass\n",
        "class add(object):\n    pass\n",
        "def add_one(a):\n    pass\n",
        "if True:\n    def add(a):\n        pass\n",
    ]
    cases += [(code, "add") for code in tricky]
    for code, name in cases:
        assert _defines(code, name) == _defines_by_parsing(code, name), code[:200]
    # Code that does not parse is a syntax error with or without the prompt in front of
    # it; the shortcut leaves it without (its line numbers are then the candidate's own).
    prose = "Here is my answer:\ndef add(a, b):\n    return a + b\n"
    assert _defines(prose, "add")
    assert not _defines_by_parsing(prose, "add")

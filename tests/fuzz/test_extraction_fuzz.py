"""The reward API's code extraction under arbitrary completions: it always returns a
string, never raises, and follows its documented rule (the last Python block, else the
last block, else the whole text; a fence left open runs to the end; a closing fence is
the same character, at least as long, indented at most three spaces)."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz.conftest import fuzz_settings
from trainer_bridge.extraction import extract_code, fenced_blocks

PYTHON_TAGS = ["python", "py", "python3", "py3", "Python", "PY3"]
OTHER_TAGS = ["", "bash", "text", "js", "pycon", "python-repl", "ruby"]


def _is_fence_like(line: str) -> bool:
    """Could this line open or close a fence? (the rule's own test, stated plainly)."""
    stripped = line.rstrip("\r").lstrip(" ")
    return len(line) - len(line.lstrip(" ")) <= 3 and stripped.startswith(("```", "~~~"))


# Lines with backticks and tildes inside them (inline code, ~~strike~~, a shell's `~`), but
# never at the start of a line where they would make a fence.
_line = st.text(
    alphabet=st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)) | st.sampled_from("`~ \t\r"),
    max_size=30,
).filter(lambda line: not _is_fence_like(line))
_prose = st.lists(_line, max_size=4).map("\n".join)
_code = st.lists(_line, min_size=1, max_size=6).map("\n".join).filter(lambda code: code.strip())


def _fence(char: str, length: int) -> str:
    return char * length


def _as_run(code: str) -> str:
    """What extraction hands the sandbox for a block's body: the body, ending in a newline."""
    return code if code.endswith("\n") else code + "\n"


@st.composite
def _block(draw: Any, *, tags: list[str]) -> tuple[str, str]:
    """(markdown of one closed block, its body)."""
    char = draw(st.sampled_from("`~"))
    length = draw(st.integers(3, 6))
    indent = " " * draw(st.integers(0, 3))
    closing = _fence(char, draw(st.integers(length, length + 2)))
    code = draw(_code)
    tag = draw(st.sampled_from(tags))
    space = draw(st.sampled_from(["", " ", "\t"])) if tag else ""
    return f"{indent}{_fence(char, length)}{space}{tag}\n{code}\n{indent}{closing}", code


@fuzz_settings(max_examples=200)
@given(st.text(max_size=400))
@example("```")
@example("```python\n```python\n```")
@example("\r\n```py\r\n\r\n")
@example("~~~\x00\n\x00\n~~~~")
@example("    ```python\nx = 1\n    ```")
def test_extraction_returns_a_string_drawn_from_the_completion_for_any_text(text: str) -> None:
    code = extract_code(text)
    assert isinstance(code, str)
    # Either the whole completion, or a block's body with a final newline added.
    assert code == text or (code.endswith("\n") and (code in text or code[:-1] in text))
    if not any(_is_fence_like(line) for line in text.split("\n")):
        assert code == text


@fuzz_settings(max_examples=120)
@given(data=st.data(), before=_prose, after=_prose)
def test_a_python_block_is_recovered_exactly_from_any_prose(data: Any, before: str, after: str) -> None:
    block, code = data.draw(_block(tags=PYTHON_TAGS), label="block")
    assert extract_code(f"{before}\n{block}\n{after}") == _as_run(code)


@fuzz_settings(max_examples=80)
@given(st.data(), st.lists(_prose, min_size=4, max_size=4))
def test_the_last_python_block_wins_over_earlier_ones_and_over_any_other_language(data: Any, prose: list[str]) -> None:
    first, _ = data.draw(_block(tags=PYTHON_TAGS), label="an earlier python block")
    last, last_code = data.draw(_block(tags=PYTHON_TAGS), label="the last python block")
    other, _ = data.draw(_block(tags=OTHER_TAGS), label="another language, after it")
    text = "\n".join([prose[0], first, prose[1], last, prose[2], other, prose[3]])
    assert extract_code(text) == _as_run(last_code)
    # Without Python, the last block of any language.
    text_without = "\n".join([prose[0], other, prose[1]])
    blocks = [b for b in fenced_blocks(text_without) if b.body.strip()]
    assert extract_code(text_without) == _as_run(blocks[-1].body)


@fuzz_settings(max_examples=60)
@given(data=st.data(), before=_prose)
def test_a_fence_left_open_by_a_cut_off_generation_runs_to_the_end(data: Any, before: str) -> None:
    tag = data.draw(st.sampled_from(PYTHON_TAGS))
    char = data.draw(st.sampled_from("`~"))
    code = data.draw(_code)
    text = f"{before}\n{char * 3}{tag}\n{code}"
    assert extract_code(text) == _as_run(code)
    assert fenced_blocks(text)[-1].closed is False


@fuzz_settings(max_examples=60)
@given(_code, st.integers(4, 7), st.integers(3, 6), st.sampled_from("`~"))
def test_a_shorter_fence_or_the_other_character_inside_a_block_does_not_close_it(
    code: str, outer: int, inner: int, char: str
) -> None:
    other = "~" if char == "`" else "`"
    inner = min(inner, outer - 1)
    body = f"{code}\n{char * inner}\n{other * outer}\n{code}"
    text = f"Answer:\n{char * outer}python\n{body}\n{char * outer}\nDone."
    assert extract_code(text) == _as_run(body)


@fuzz_settings(max_examples=40)
@given(_code, st.integers(4, 8))
def test_a_fence_indented_four_spaces_or_more_is_code_not_a_fence(code: str, indent: int) -> None:
    text = f"{' ' * indent}```python\n{code}\n{' ' * indent}```"
    assert fenced_blocks(text) == []
    assert extract_code(text) == text


@fuzz_settings(max_examples=40)
@given(data=st.data(), whitespace=st.text(alphabet=" \t\r\n", max_size=6))
def test_an_empty_block_is_no_answer_and_an_earlier_block_is_used(data: Any, whitespace: str) -> None:
    block, code = data.draw(_block(tags=OTHER_TAGS), label="a block with code")
    text = f"{block}\n```python\n{whitespace.replace(chr(10), '')}\n```"
    assert extract_code(text) == _as_run(code)

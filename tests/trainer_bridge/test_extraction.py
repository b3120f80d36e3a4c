"""The code the reward API runs from a completion: the last Python block, else the
last block, else the text; a fence cut off at the end runs to the end."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from trainer_bridge.extraction import extract_code, fenced_blocks


def test_the_last_python_block_wins_over_examples_and_other_languages():
    text = (
        "First, an example:\n```python\nprint(add(1, 2))\n```\n"
        "The shell:\n```bash\npython main.py\n```\n"
        "The answer:\n```python\ndef add(a, b):\n    return a + b\n```\nThat is all."
    )
    assert extract_code(text) == "def add(a, b):\n    return a + b\n"


def test_without_a_python_tag_the_last_block_then_the_text():
    assert extract_code("```\nx = 1\n```\n```text\ny = 2\n```") == "y = 2\n"
    assert extract_code("def f():\n    return 1\n") == "def f():\n    return 1\n"
    assert extract_code("```python\n\n```\nplain") == "```python\n\n```\nplain"  # an empty block is no answer


def test_fences_of_tildes_longer_fences_indents_and_cut_off_generations():
    assert extract_code("~~~py\na = 1\n~~~") == "a = 1\n"
    assert extract_code("````python\ns = '```'\n````") == "s = '```'\n"  # a shorter fence inside does not close it
    assert extract_code("   ```python\nb = 2\n   ```") == "b = 2\n"
    assert extract_code("Sure:\n```python\ndef f():\n    return 3") == "def f():\n    return 3\n"
    assert [b.closed for b in fenced_blocks("```python\nx\n```\n```python\ny")] == [True, False]
    assert extract_code("```python\r\nz = 3\r\n```\r\n") == "z = 3\r\n"


_line = st.text(alphabet=st.characters(blacklist_characters="`~\n\r", blacklist_categories=("Cs",)), max_size=40)
_code = st.lists(_line, min_size=1, max_size=8).map("\n".join).filter(lambda s: s.strip())
_prose = st.lists(_line, max_size=4).map("\n".join)


@given(before=_prose, code=_code, after=_prose, tag=st.sampled_from(["python", "py", "Python3", ""]))
def test_any_code_in_one_block_comes_back_as_it_is(before, code, after, tag):
    extracted = extract_code(f"{before}\n```{tag}\n{code}\n```\n{after}")
    assert extracted.endswith("\n") and extracted.rstrip("\n") == code.rstrip("\n")


@given(text=st.text(max_size=300))
def test_extraction_never_fails_and_returns_text_from_the_completion(text):
    code = extract_code(text)
    assert isinstance(code, str)
    assert code.rstrip("\n") in text or code == text


def test_the_block_of_the_tasks_language_is_taken_before_the_others():
    answer = "Here is how it runs:\n```bash\n./a.out < in\n```\n```cpp\nint main() {}\n```\n```python\nprint(1)\n```\n"
    assert extract_code(answer, "cpp17") == "int main() {}\n"
    assert extract_code(answer, "python") == "print(1)\n"
    # No block of the language: the last block, as for Python.
    assert extract_code(answer, "rust") == "print(1)\n"
    assert extract_code("```C++\nint x;\n```\n```go\npackage main\n```", "cpp20") == "int x;\n"

import pytest
from inikit import ParseError, parse

SAMPLE = """\
# a comment
name = demo

[Server]
host = example.org
port: 8080 ; the port
paths = /a,
    /b

; another comment
[empty]
"""


def test_options_before_a_header_go_to_the_default_section():
    assert parse(SAMPLE).get("default", "name") == "demo"


def test_section_names_and_keys_are_lowercased():
    config = parse(SAMPLE)
    assert config.sections() == ["default", "server", "empty"]
    assert config.get("SERVER", "Host") == "example.org"


def test_colon_separates_like_equals_and_inline_comments_are_dropped():
    assert parse(SAMPLE).get("server", "port") == "8080"


def test_indented_lines_continue_the_previous_value():
    assert parse(SAMPLE).get("server", "paths") == "/a,\n/b"


def test_a_value_may_contain_the_other_separator():
    config = parse("url = http://example.org:80/x\n")
    assert config.get("default", "url") == "http://example.org:80/x"


def test_an_empty_value_is_kept():
    assert parse("[s]\nkey =\n").get("s", "key") == ""


def test_a_duplicate_key_is_an_error_with_its_line():
    with pytest.raises(ParseError) as error:
        parse("[s]\na = 1\nb = 2\nA = 3\n")
    assert error.value.line == 4
    assert "duplicate" in str(error.value)


def test_a_line_without_separator_is_an_error():
    with pytest.raises(ParseError, match="line 2"):
        parse("[s]\njust words\n")


def test_an_unclosed_header_is_an_error():
    with pytest.raises(ParseError, match="end with"):
        parse("[s\n")


def test_an_empty_key_or_section_is_an_error():
    with pytest.raises(ParseError):
        parse("= value\n")
    with pytest.raises(ParseError):
        parse("[ ]\n")

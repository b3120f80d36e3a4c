from inikit import dump, parse


def test_dump_writes_sections_in_order_with_a_blank_line_between():
    text = dump(parse("[b]\nx = 1\n[a]\ny = 2\n"))
    assert text == "[b]\nx = 1\n\n[a]\ny = 2\n"


def test_default_options_are_written_first_without_a_header():
    assert dump(parse("top = 1\n[s]\nk = v\n")) == "top = 1\n\n[s]\nk = v\n"


def test_multi_line_values_are_indented_and_read_back():
    config = parse("[s]\nk = one\n    two\n")
    text = dump(config)
    assert text == "[s]\nk = one\n    two\n"
    assert parse(text).get("s", "k") == "one\ntwo"


def test_dump_of_an_empty_config_is_empty():
    assert dump(parse("")) == ""


def test_the_separator_can_be_chosen():
    assert dump(parse("[s]\nk = v\n"), separator=": ") == "[s]\nk: v\n"

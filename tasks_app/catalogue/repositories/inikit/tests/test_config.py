import pytest
from inikit import Config, MissingOption, parse


def make():
    return parse("[app]\nworkers = 4\nmask = 0x1f\ndebug = Yes\nquiet = off\ntags = a, b,, c\nlevels = 1\n    2\n")


def test_get_int_reads_decimal_and_prefixed_integers():
    config = make()
    assert config.get_int("app", "workers") == 4
    assert config.get_int("app", "mask") == 31


def test_get_int_refuses_words():
    with pytest.raises(ValueError, match="not an integer"):
        parse("[a]\nn = many\n").get_int("a", "n")


def test_get_bool_reads_the_usual_words_in_any_case():
    config = make()
    assert config.get_bool("app", "debug") is True
    assert config.get_bool("app", "quiet") is False


def test_get_bool_refuses_other_words():
    with pytest.raises(ValueError, match="not a boolean"):
        parse("[a]\nflag = maybe\n").get_bool("a", "flag")


def test_defaults_are_returned_for_missing_options():
    config = make()
    assert config.get("app", "nope", "x") == "x"
    assert config.get_int("app", "nope", 7) == 7
    assert config.get_bool("nowhere", "flag", False) is False


def test_a_missing_option_without_default_raises():
    with pytest.raises(MissingOption):
        make().get("app", "nope")
    with pytest.raises(MissingOption):
        make().get("nowhere", "workers")


def test_get_list_splits_on_commas_and_lines_and_drops_blanks():
    config = make()
    assert config.get_list("app", "tags") == ["a", "b", "c"]
    assert config.get_list("app", "levels") == ["1", "2"]
    assert config.get_list("app", "absent") == []


def test_merged_lays_the_other_config_over_this_one():
    base = parse("[a]\nx = 1\ny = 2\n")
    override = parse("[a]\ny = 3\n[b]\nz = 4\n")
    merged = base.merged(override)
    assert (merged.get("a", "x"), merged.get("a", "y"), merged.get("b", "z")) == ("1", "3", "4")
    assert base.get("a", "y") == "2"


def test_has_and_options():
    config = Config()
    config.set("S", "K", "v")
    assert config.has("s", "k") and not config.has("s", "other")
    assert config.options("s") == ["k"]

from slugtext import slugify, unique_slug


def test_slugify_lowercases_and_joins_words():
    assert slugify("Hello, World!") == "hello-world"


def test_accents_are_dropped_and_numbers_kept():
    assert slugify("Crème Brûlée: 3 recipes") == "creme-brulee-3-recipes"


def test_apostrophes_disappear_inside_words():
    assert slugify("Don't Panic") == "dont-panic"


def test_a_custom_separator():
    assert slugify("a b c", separator="_") == "a_b_c"


def test_max_length_cuts_at_a_word_boundary():
    assert slugify("the quick brown fox", max_length=15) == "the-quick-brown"
    assert slugify("the quick brown fox", max_length=14) == "the-quick"


def test_a_single_long_word_is_cut_hard():
    assert slugify("supercalifragilistic", max_length=5) == "super"


def test_short_text_is_not_cut():
    assert slugify("short", max_length=5) == "short"


def test_unique_slug_numbers_taken_slugs():
    assert unique_slug("My Post", []) == "my-post"
    assert unique_slug("My Post", ["my-post"]) == "my-post-2"
    assert unique_slug("My Post", ["my-post", "my-post-2", "my-post-3"]) == "my-post-4"
    assert unique_slug("!!!", []) == "item"

from slugtext import Token, sentences, tokenize, words


def test_tokens_carry_their_kind_and_offset():
    assert tokenize("Hi, 42!") == [
        Token("word", "Hi", 0),
        Token("punct", ",", 2),
        Token("number", "42", 4),
        Token("punct", "!", 6),
    ]


def test_a_token_knows_where_it_ends():
    token = tokenize("  hello")[0]
    assert (token.start, token.end) == (2, 7)


def test_decimals_are_one_number_but_a_trailing_point_is_punctuation():
    assert [t.text for t in tokenize("pi is 3.14.")] == ["pi", "is", "3.14", "."]
    assert [t.kind for t in tokenize("1.2.3")] == ["number", "punct", "number"]


def test_apostrophes_stay_inside_words_and_digits_may_follow_letters():
    assert [t.text for t in tokenize("don't stop mp3")] == ["don't", "stop", "mp3"]


def test_words_are_lowercased_and_skip_numbers_and_punctuation():
    assert words("The 3 Little Pigs!") == ["the", "little", "pigs"]


def test_sentences_split_after_runs_of_end_marks():
    assert sentences("Hi there. How are you?! Fine") == ["Hi there.", "How are you?!", "Fine"]
    assert sentences("   ") == []

"""Near-duplicate detection: the normaliser, the detector on planted copies of
HumanEval, and the catalogue scan that flags both tasks of a pair."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from evaluation.difficulty.duplicate_scan import duplicates_scan
from evaluation.difficulty.duplicates import Item, find_duplicates, normalise_code, suite_digest
from evaluation.difficulty.duplicates_audit import audit, paraphrase, renamed
from evaluation.models import TaskFlag
from tests.factories import make_task

ORIGINAL = '''def longest_run(values, target):
    """Length of the longest run of `target` in `values`."""
    best = run = 0  # the current run and the best so far
    for value in values:
        run = run + 1 if value == target else 0
        best = max(best, run)
    return best
'''


def test_renamed_and_redocumented_copies_normalise_to_the_same_code():
    copy = renamed(ORIGINAL, seed=3)
    assert "longest_run" not in copy and "values" not in copy and "Length of" not in copy
    assert normalise_code(copy) == normalise_code(ORIGINAL)
    assert "max(" in normalise_code(ORIGINAL)  # names it does not bind stay: they say what it does
    assert normalise_code("def broken(:") == "def broken(:"  # what does not parse is compared as written


def test_tests_that_differ_only_in_layout_have_one_digest():
    assert suite_digest(["assert f(1) == 2", "assert f(2)==3"]) == suite_digest(["assert  f(2)==3", "assert f(1) == 2"])
    assert suite_digest(["assert f(1) == 2"]) != suite_digest(["assert f(1) == 3"])


def test_the_detector_finds_planted_copies_of_humaneval():
    """The figures bench/duplicates.py prints, held to a floor."""
    from bench.duplicates import humaneval_items

    figures = audit(humaneval_items(), copies=40, seed=0)
    assert figures["code"].recall == 1.0 and figures["code"].precision >= 0.95
    assert figures["statement"].recall >= 0.85 and figures["statement"].precision >= 0.8
    assert figures["either"].recall == 1.0


def test_a_paraphrase_keeps_the_meaning_words_but_not_the_wording():
    statement = "Given a list of numbers, return the largest number. Return 0 for an empty list."
    reworded = paraphrase(statement, seed=1)
    assert reworded != statement and set(reworded.lower().split()) - set(statement.lower().split())
    assert paraphrase(statement, seed=1) == reworded  # the same seed, the same rewording


def test_unrelated_tasks_are_not_paired_and_bad_keys_are_refused():
    items = [Item("a", "Sum two integers.", "def f(a, b):\n    return a + b\n"),
             Item("b", "Reverse a string.", "def g(s):\n    return s[::-1]\n")]  # fmt: skip
    assert find_duplicates(items) == []
    with pytest.raises(ValueError, match="unique"):
        find_duplicates([items[0], items[0]])


@pytest.mark.django_db
def test_the_scan_flags_both_tasks_of_a_pair_and_clears_flags_it_no_longer_finds(curator, capsys):
    original = make_task(owner=curator, slug="add-two")
    copy = make_task(
        owner=curator,
        slug="sum-pair",
        title="Sum a pair",
        statement="Return the sum of `x` and `y`.",
        starter_code="def total(x, y):\n    ...\n",
        entry_point="total",
        visible_tests=["assert total(1, 2) == 3"],
        hidden_tests=["assert total(-1, 1) == 0", "assert total(10, 5) == 15"],
        solutions=[{"role": "reference", "label": "ref", "code": "def total(x, y):\n    return x + y\n"}],
    )
    make_task(
        owner=curator,
        slug="reverse",
        title="Reverse",
        statement="Reverse the characters of a text.",
        starter_code="def rev(s):\n    ...\n",
        entry_point="rev",
        visible_tests=["assert rev('ab') == 'ba'"],
        hidden_tests=["assert rev('') == ''", "assert rev('abc') == 'cba'"],
        solutions=[{"role": "reference", "label": "ref", "code": "def rev(s):\n    return s[::-1]\n"}],
    )
    pairs = duplicates_scan()
    assert [(p["first"], p["second"]) for p in pairs] == [("add-two", "sum-pair")]
    flag = TaskFlag.objects.get(task=original, code="DUPLICATE")
    assert flag.related == copy and "Near-duplicate of sum-pair" in flag.message and "reference code" in flag.message
    assert TaskFlag.objects.get(task=copy, code="DUPLICATE").related == original
    assert TaskFlag.objects.filter(code="DUPLICATE").count() == 2

    duplicates_scan(code_threshold=1.0, statement_threshold=1.0)  # nothing is that alike any more
    assert not TaskFlag.objects.filter(code="DUPLICATE").exists()
    call_command("scan_duplicates")
    assert "1 near-duplicate pair(s) flagged" in capsys.readouterr().out

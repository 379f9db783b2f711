"""fast_bpe's speed rule for ``train_fast`` (``bpe_labs/speed.py`` measures it): a case, a unit and
a limit, the same in the visible check of Activities 3 and 4 (a copy, checked by
``tests/test_speed_rule.py``) and in their hidden tests (other seeds: cases of the same kind).

The unit: ``RECOUNTS`` recounts (:func:`recounts`: every word's symbols, its characters and
``</w>``, and the count of each adjacent pair weighted by the word's count), what the simple
trainer does at every merge. On ``WORDS`` distinct words (:func:`speed_words`: Greek letters, so
that no word of a hidden case can be mistaken for the text of a message; counts up to a million,
so few ties), ``MERGES`` merges may take ``MULTIPLE`` units, ``MULTIPLE * RECOUNTS`` recounts.
Updating the counts of the words each merge changes takes 2 to 5 units (the course's solution);
recounting after every merge, as train_simple does, 50 or more.

    >>> words = speed_words(7)
    >>> len(words), min(map(len, words)), max(map(len, words)) <= 10
    (2000, 3, True)
    >>> recounts({"ab": 2})[("a", "b")]
    2
"""
from __future__ import annotations

import random

WORDS, MERGES, RECOUNTS, MULTIPLE = 2000, 300, 10, 15
LETTERS = "αβγδεζηθικλμνξοπ"


def speed_words(seed):
    """WORDS distinct words of 3 to 10 LETTERS, each with a count from 1 to a million."""
    rng = random.Random(seed)
    words = {}
    while len(words) < WORDS:
        # (the count is drawn before the word, as bpe_labs.hidden.random_word_counts draws them)
        words["".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 10)))] = (
            rng.randint(1, 10**6))
    return words


def recounts(word_counts):
    """train_fast's unit: RECOUNTS times, every word's symbols (its characters and </w>) and the
    count of each adjacent pair, weighted by the word's count; the last counts."""
    for _ in range(RECOUNTS):
        counts = {}
        for word, count in word_counts.items():
            symbols = list(word) + ["</w>"]
            for pair in zip(symbols, symbols[1:]):
                counts[pair] = counts.get(pair, 0) + count
    return counts

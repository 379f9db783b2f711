"""africa_galore's speed rule for ``learn_bpe_fast`` (``bpe_labs/speed.py`` measures it): a case, a
unit and a limit, the same in the visible check of Activity 6 (a copy, checked by
``tests/test_speed_rule.py``) and in its hidden test (another seed: a case of the same kind).

The unit: counting the case's words once (:func:`count_words`), which any ``learn_bpe_fast`` does
first. On ``WORDS`` words made of ``DISTINCT`` distinct ones (:func:`speed_corpus`), ``MERGES``
merges may take ``MULTIPLE`` units. Counting pairs once per distinct word, weighted by its
frequency, takes 1 to 3 units (the course's reference too); the naive loop, which counts every
copy at every merge, hundreds.

    >>> corpus = speed_corpus(7)
    >>> len(corpus), len(corpus[0].split(" ")), len(count_words(corpus))
    (1, 100000, 25)
"""
from __future__ import annotations

import random
from collections import Counter

WORDS, DISTINCT, MERGES, MULTIPLE = 100000, 25, 20, 10
LETTERS = "abcdefgh"


def speed_corpus(seed):
    """A dataset of one text: WORDS words made of DISTINCT distinct ones of 3 to 8 LETTERS."""
    rng = random.Random(seed)
    words = set()
    while len(words) < DISTINCT:
        words.add("".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 8))))
    words = sorted(words)
    return [" ".join(rng.choice(words) for _ in range(WORDS))]


def count_words(dataset):
    """learn_bpe_fast's unit: the dataset's words counted once, split as Activity 1 splits them."""
    counts = Counter()
    for text in dataset:
        counts.update(text.split(" "))
    return counts

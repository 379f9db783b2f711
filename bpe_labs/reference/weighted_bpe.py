"""The learn loop of ``char_bpe`` counted over unique words, each weighted by its frequency.

A corpus of 31,000 words holds only a few thousand distinct ones, and every copy of a word
is split the same way at every step. So instead of counting pairs in every copy, count them
once per distinct word and add the word's frequency. The merges are exactly those of
``char_bpe.learn_bpe``, ties included, because the distinct words are kept in the order they
first appear: the first copy of a word is where its pairs are first seen, so the counter
meets the pairs in the same order as the naive loop does. The Africa Galore lab's
``learn_bpe_fast`` is graded against this module.

    >>> learn_bpe_weighted(["a aa a"], 2)
    ([('a', '</w>'), ('a', 'a</w>')], ['a', '</w>', 'a</w>', 'aa</w>'])
"""
from __future__ import annotations

from collections import Counter

from bpe_labs.reference.base import (
    Pair, count_pairs, merge_pair, most_frequent_pair, word_to_symbols,
)
from bpe_labs.reference.char_bpe import split_words

# The lab's name for ``base.count_pairs``: each (symbols, frequency) entry adds its frequency per
# pair.
weighted_pair_frequencies = count_pairs


def word_frequencies(dataset: list[str]) -> dict[str, int]:
    """Distinct words in the order they first appear, with their counts.

    >>> word_frequencies(["b a b"])
    {'b': 2, 'a': 1}
    """
    return dict(Counter(word for text in dataset for word in split_words(text)))


def learn_bpe_weighted(dataset: list[str], num_merges: int) -> tuple[list[Pair], list[str]]:
    """Learn the merges of ``char_bpe.learn_bpe(dataset,
    num_merges)``; return (merges, vocabulary)."""
    words = [(word_to_symbols(word), frequency)
             for word, frequency in word_frequencies(dataset).items()]
    # The vocabulary of bpe_initialize(dataset), from the distinct words: the same symbols in the
    # same order.
    vocabulary = list(dict.fromkeys(symbol for symbols, _ in words for symbol in symbols))
    merges: list[Pair] = []
    for _ in range(num_merges):
        pair = most_frequent_pair(weighted_pair_frequencies(words))
        if pair is None:
            break
        merges.append(pair)
        vocabulary.append(pair[0] + pair[1])
        words = [(merge_pair(symbols, pair), frequency) for symbols, frequency in words]
    return merges, vocabulary

"""Character-level BPE with a separate end-of-word symbol, as the toy and Africa Galore labs teach
it.

Every word becomes its characters followed by the symbol ``</w>``; a merge joins two
adjacent symbols into one. The most frequent pair is merged first, and on equal counts
the pair seen first in corpus order wins (the order ``Counter`` remembers when the
pairs are counted word by word, left to right). This module is the reference the hidden
tests of those labs compare student code against: keep it obviously correct, not fast.
The labs' names are kept here; the work is done by ``base``.

    >>> corpus, vocab = bpe_initialize(["a aa"])
    >>> corpus
    [['a', '</w>'], ['a', 'a', '</w>']]
    >>> merges, vocab, corpus = learn_bpe(["a aa"], 2)
    >>> merges
    [('a', '</w>'), ('a', 'a</w>')]
"""
from __future__ import annotations

from collections import Counter

from bpe_labs.reference.base import (END_OF_WORD, Pair, apply_merges, count_pairs,  # noqa: F401 (the labs' names)
                                       merge_pair, most_frequent_pair, word_to_symbols)

Word = list[str]

# The labs' name for ``base.merge_pair``: join each occurrence of a pair, left to right, never
# overlapping.
merge_pair_in_word = merge_pair


def split_words(text: str, keep_empty: bool = False) -> list[str]:
    """Words of a text split on single spaces, empty strings dropped.

    With ``keep_empty`` the empty strings that double spaces make stay, as in DeepMind's lab:
    each becomes the word ``["</w>"]``, which has no pair, so the merges are the same either way.

    >>> split_words("a  b")
    ['a', 'b']
    >>> split_words("a  b", keep_empty=True)
    ['a', '', 'b']
    """
    return [word for word in text.split(" ") if word or keep_empty]


def bpe_initialize(dataset: list[str], keep_empty: bool = False) -> tuple[list[Word], list[str]]:
    """Split each text into words and each word into symbols; return (corpus, vocabulary).

    The vocabulary lists every symbol once, in the order it first appears.

    >>> bpe_initialize(["ab a"])
    ([['a', 'b', '</w>'], ['a', '</w>']], ['a', 'b', '</w>'])
    """
    corpus = [word_to_symbols(word) for text in dataset for word in split_words(text, keep_empty)]
    vocabulary = list(dict.fromkeys(symbol for word in corpus for symbol in word))
    return corpus, vocabulary


def get_pair_frequencies(corpus: list[Word]) -> Counter:
    """Count adjacent symbol pairs inside each word, in corpus order.

    >>> get_pair_frequencies([["a", "a", "a", "</w>"]])
    Counter({('a', 'a'): 2, ('a', '</w>'): 1})
    """
    return count_pairs((word, 1) for word in corpus)


def learn_bpe(
    dataset: list[str], num_merges: int, keep_empty: bool = False
) -> tuple[list[Pair], list[str], list[Word]]:
    """Learn up to ``num_merges`` merges; return (merges in order, vocabulary, merged corpus).

    The vocabulary is the initial one followed by each merged symbol in the order learned.
    Stops early when no word has two symbols left.

    >>> merges, vocabulary, corpus = learn_bpe(["ab ab b"], 5)  # 2 merges: every word one symbol
    >>> merges
    [('b', '</w>'), ('a', 'b</w>')]
    >>> vocabulary
    ['a', 'b', '</w>', 'b</w>', 'ab</w>']
    >>> corpus
    [['ab</w>'], ['ab</w>'], ['b</w>']]
    """
    corpus, vocabulary = bpe_initialize(dataset, keep_empty)
    merges: list[Pair] = []
    for _ in range(num_merges):
        pair = most_frequent_pair(get_pair_frequencies(corpus))
        if pair is None:
            break
        merges.append(pair)
        vocabulary.append(pair[0] + pair[1])
        corpus = [merge_pair_in_word(word, pair) for word in corpus]
    return merges, vocabulary, corpus


def tokenize(text: str, merges: list[Pair], keep_empty: bool = False) -> list[str]:
    """Tokenize each word of ``text`` by applying ``merges`` in the order they were learned.

    >>> tokenize("aaa", [("a", "a")])
    ['aa', 'a', '</w>']
    """
    return [token for word in split_words(text, keep_empty)
            for token in apply_merges(word_to_symbols(word), merges)]

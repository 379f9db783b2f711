"""Character-level BPE with a separate end-of-word symbol, as the toy and Africa Galore labs teach it.

Every word becomes its characters followed by the symbol ``</w>``; a merge joins two
adjacent symbols into one. The most frequent pair is merged first, and on equal counts
the pair seen first in corpus order wins (the order ``Counter`` remembers when the
pairs are counted word by word, left to right). This module is the reference the hidden
tests of those labs compare student code against: keep it obviously correct, not fast.

    >>> corpus, vocab = bpe_initialize(["a aa"])
    >>> corpus
    [['a', '</w>'], ['a', 'a', '</w>']]
    >>> merges, vocab, corpus = learn_bpe(["a aa"], 2)
    >>> merges
    [('a', '</w>'), ('a', 'a</w>')]
"""
from __future__ import annotations

from collections import Counter

END_OF_WORD = "</w>"

Word = list[str]
Pair = tuple[str, str]


def split_words(text: str, keep_empty: bool = False) -> list[str]:
    """Words of a text split on single spaces, empty strings dropped: ``"a  b" -> ["a", "b"]``.

    With ``keep_empty`` the empty strings that double spaces make stay, as in DeepMind's lab
    (``"a  b" -> ["a", "", "b"]``): each becomes the word ``["</w>"]``, which has no pair, so the
    merges are the same either way.
    """
    return [word for word in text.split(" ") if word or keep_empty]


def word_to_symbols(word: str) -> Word:
    """``"low" -> ["l", "o", "w", "</w>"]``."""
    return list(word) + [END_OF_WORD]


def bpe_initialize(dataset: list[str], keep_empty: bool = False) -> tuple[list[Word], list[str]]:
    """Split each text into words and each word into symbols; return (corpus, vocabulary).

    The vocabulary lists every symbol once, in the order it first appears.

    ``["ab a"] -> ([["a", "b", "</w>"], ["a", "</w>"]], ["a", "b", "</w>"])``
    """
    corpus = [word_to_symbols(word) for text in dataset for word in split_words(text, keep_empty)]
    vocabulary = list(dict.fromkeys(symbol for word in corpus for symbol in word))
    return corpus, vocabulary


def get_pair_frequencies(corpus: list[Word]) -> Counter:
    """Count adjacent symbol pairs inside each word, in corpus order.

    ``[["a", "a", "a", "</w>"]] -> Counter({("a", "a"): 2, ("a", "</w>"): 1})``
    """
    counts: Counter = Counter()
    for word in corpus:
        for pair in zip(word, word[1:]):
            counts[pair] += 1
    return counts


def merge_pair_in_word(word: Word, pair: Pair) -> Word:
    """Replace each occurrence of ``pair`` by the joined symbol, left to right, never overlapping.

    ``(["a", "a", "a", "</w>"], ("a", "a")) -> ["aa", "a", "</w>"]``
    """
    merged: Word = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            merged.append(word[i] + word[i + 1])
            i += 2
        else:
            merged.append(word[i])
            i += 1
    return merged


def most_frequent_pair(counts: Counter) -> Pair | None:
    """The pair with the highest count; on a tie the one counted first. ``None`` when empty."""
    best, best_count = None, 0
    for pair, count in counts.items():
        if count > best_count:
            best, best_count = pair, count
    return best


def learn_bpe(dataset: list[str], num_merges: int, keep_empty: bool = False) -> tuple[list[Pair], list[str], list[Word]]:
    """Learn up to ``num_merges`` merges; return (merges in order, vocabulary, merged corpus).

    The vocabulary is the initial one followed by each merged symbol in the order learned.
    Stops early when no word has two symbols left.
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

    ``("aaa", [("a", "a")]) -> ["aa", "a", "</w>"]``
    """
    tokens: list[str] = []
    for word in split_words(text, keep_empty):
        symbols = word_to_symbols(word)
        for pair in merges:
            symbols = merge_pair_in_word(symbols, pair)
        tokens.extend(symbols)
    return tokens

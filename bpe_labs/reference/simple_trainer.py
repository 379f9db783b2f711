"""The obviously-correct BPE trainer: recount every pair after every merge.

This is the definition ``fast_trainer`` must reproduce exactly, merge for merge. It is
slow on purpose (each step rescans every word), so that each line can be checked by eye.

Input: word counts ``{word: count}`` whose insertion order is the order in which the
words first appear in the corpus (``pretokenize.count_words`` makes one).

* ``mode="char"``: a word is its characters followed by a separate end-of-word symbol
  ``</w>`` (``"low"`` is ``l o w </w>``).
* ``mode="byte"``: a word is a GPT-2 pre-token (``pretokenize.count_pretokens``), already
  written with one printable character per byte (``"Ġlow"``); its symbols are those
  characters and there is no end-of-word symbol. Any other character is refused.

Each step counts adjacent pairs inside words, every occurrence weighted by its word's
count, and merges the most frequent pair everywhere, left to right, never overlapping.
On equal counts:

* ``tie="first"`` (the course rule): the pair seen first in corpus order wins, i.e. the
  first maximal key of a ``Counter`` filled by scanning the words in first-occurrence
  order, each left to right;
* ``tie="lexicographic"``: the greatest pair ``(a, b)`` (``max`` over ``(count, pair)``).
  In char mode ``a`` and ``b`` compare as strings. In byte mode they compare as the
  **bytes** they stand for, as CS336's ``train_bpe`` does: ``Ġ`` is the space, 0x20, below
  every letter, although the character U+0120 is above them. ``("Ġ", "a")`` beats
  ``("z", "a")`` as strings; ``("z", "a")`` wins as bytes.

    >>> train_bpe({"low": 2, "lower": 1}, 3)
    [('l', 'o'), ('lo', 'w'), ('low', '</w>')]

``("l", "o")`` and ``("o", "w")`` both occur 3 times and ``("l", "o")`` is seen first;
then ``("lo", "w")`` occurs 3 times; then ``("low", "</w>")`` (2, from "low") beats
``("low", "e")`` (1, from "lower").
"""
from __future__ import annotations

from collections import Counter

from bpe_labs.reference import base
from bpe_labs.reference.base import Pair, merge_pair, symbol_bytes

MODES = ("char", "byte")
TIES = ("first", "lexicographic")

# ``base.count_pairs``: weighted pair counts, filled word by word, left to right (the fast_bpe lab's
# name).
count_pairs = base.count_pairs
# ``base.merge_pair``: join each occurrence of a pair, left to right, never overlapping.
merge_symbols = merge_pair


def word_symbols(word: str, mode: str = "char") -> list[str]:
    """A word's symbols: with ``</w>`` in char mode, its byte characters alone in byte mode.

    >>> word_symbols("low")
    ['l', 'o', 'w', '</w>']
    >>> word_symbols("Ġlow", mode="byte")
    ['Ġ', 'l', 'o', 'w']
    """
    if mode == "char":
        return base.word_to_symbols(word)
    if mode == "byte":
        return list(word)
    raise ValueError(f"mode must be one of {MODES}, not {mode!r}")


def check_arguments(word_counts: dict[str, int], num_merges: int, mode: str, tie: str) -> None:
    """Raise ``ValueError`` on arguments both trainers reject the same way."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if tie not in TIES:
        raise ValueError(f"tie must be one of {TIES}, not {tie!r}")
    if num_merges < 0:
        raise ValueError(f"num_merges must be >= 0, not {num_merges}")
    for word, count in word_counts.items():
        if not word or type(count) is not int or count <= 0:
            raise ValueError(f"every word must be non-empty with a positive int count: {word!r}: "
                             f"{count!r}")
    if mode == "byte":
        others = set("".join(word_counts)).difference(base.BYTE_OF_CHARACTER)
        if others:
            raise ValueError("byte mode takes GPT-2's byte characters only "
                             "(pretokenize.count_pretokens "
                             f"writes them), not {sorted(others)[:5]!r}")


def tie_key(pair: Pair, mode: str = "char") -> tuple:
    """What ``tie="lexicographic"`` compares: the strings (char mode), the bytes (byte mode).

    >>> tie_key(("Ġ", "a")), tie_key(("Ġ", "a"), mode="byte")
    (('Ġ', 'a'), (b' ', b'a'))
    """
    return pair if mode == "char" else (symbol_bytes(pair[0]), symbol_bytes(pair[1]))


def best_pair(counts: Counter, tie: str = "first", mode: str = "char") -> Pair | None:
    """The pair to merge next, ``None`` when there is none.

    >>> counts = Counter({("a", "b"): 2, ("c", "d"): 2})
    >>> # counted first; greater
    >>> best_pair(counts, tie="first"), best_pair(counts, tie="lexicographic")
    (('a', 'b'), ('c', 'd'))
    >>> # U+0120 > "z" as characters, 0x20 < 0x7A as bytes
    >>> counts = Counter({("Ġ", "a"): 2, ("z", "a"): 2})
    >>> best_pair(counts, tie="lexicographic"), best_pair(counts, tie="lexicographic", mode="byte")
    (('Ġ', 'a'), ('z', 'a'))
    """
    if tie == "first":
        return base.most_frequent_pair(counts)
    return base.most_frequent_pair(counts, tie_key=lambda pair: tie_key(pair, mode))


def train_bpe(word_counts: dict[str, int], num_merges: int, mode: str = "char",
              tie: str = "first") -> list[Pair]:
    """Learn up to ``num_merges`` merges; stop early when no word has two symbols left.

    After ``("a", "a")``, ``aa a </w>`` has two pairs counted once each, and ``("aa", "a")``
    comes first; after the third merge one symbol is left:

    >>> train_bpe({"aaa": 1}, 5)
    [('a', 'a'), ('aa', 'a'), ('aaa', '</w>')]
    """
    check_arguments(word_counts, num_merges, mode, tie)
    words = [(word_symbols(word, mode), count) for word, count in word_counts.items()]
    merges: list[Pair] = []
    for _ in range(num_merges):
        pair = best_pair(count_pairs(words), tie, mode)
        if pair is None:
            break
        merges.append(pair)
        words = [(merge_symbols(symbols, pair), count) for symbols, count in words]
    return merges

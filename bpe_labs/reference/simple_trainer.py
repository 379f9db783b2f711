"""The obviously-correct BPE trainer: recount every pair after every merge.

This is the definition ``fast_trainer`` must reproduce exactly, merge for merge. It is
slow on purpose (each step rescans every word), so that each line can be checked by eye.

Input: word counts ``{word: count}`` whose insertion order is the order in which the
words first appear in the corpus (``pretokenize.count_words`` makes one).

* ``mode="char"``: a word is its characters followed by a separate end-of-word symbol
  ``</w>``: ``"low" -> ["l", "o", "w", "</w>"]``.
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

from bpe_labs.reference.char_bpe import merge_pair_in_word
from bpe_labs.reference.pretokenize import BYTE_OF_CHARACTER, symbol_bytes

END_OF_WORD = "</w>"
MODES = ("char", "byte")
TIES = ("first", "lexicographic")

Pair = tuple[str, str]


def word_symbols(word: str, mode: str = "char") -> list[str]:
    """``"low" -> ["l", "o", "w", "</w>"]`` (char mode); ``"Ġlow" -> ["Ġ", "l", "o", "w"]`` (byte mode)."""
    if mode == "char":
        return list(word) + [END_OF_WORD]
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
            raise ValueError(f"every word must be non-empty with a positive int count: {word!r}: {count!r}")
    if mode == "byte":
        others = set("".join(word_counts)).difference(BYTE_OF_CHARACTER)
        if others:
            raise ValueError(f"byte mode takes GPT-2's byte characters only (pretokenize.count_pretokens "
                             f"writes them), not {sorted(others)[:5]!r}")


def count_pairs(words: list[tuple[list[str], int]]) -> Counter:
    """Weighted pair counts, filled word by word, left to right.

    ``[(["a", "a", "a"], 2), (["b", "a"], 1)] -> Counter({("a", "a"): 4, ("b", "a"): 1})``
    """
    counts: Counter = Counter()
    for symbols, count in words:
        for pair in zip(symbols, symbols[1:]):
            counts[pair] += count
    return counts


def tie_key(pair: Pair, mode: str = "char") -> tuple:
    """What ``tie="lexicographic"`` compares: the strings (char mode), the bytes (byte mode).

    ``("Ġ", "a")`` -> ``("Ġ", "a")`` in char mode, ``(b" ", b"a")`` in byte mode.
    """
    return pair if mode == "char" else (symbol_bytes(pair[0]), symbol_bytes(pair[1]))


def best_pair(counts: Counter, tie: str = "first", mode: str = "char") -> Pair | None:
    """The pair to merge next, ``None`` when there is none.

    ``Counter({("a", "b"): 2, ("c", "d"): 2})`` -> ``("a", "b")`` with ``tie="first"``
    (counted first), ``("c", "d")`` with ``tie="lexicographic"`` (greater).
    ``Counter({("Ġ", "a"): 2, ("z", "a"): 2})`` with ``tie="lexicographic"`` -> ``("Ġ", "a")``
    in char mode (U+0120 > "z"), ``("z", "a")`` in byte mode (0x20 < 0x7A).
    """
    if not counts:
        return None
    if tie == "first":
        return max(counts, key=counts.__getitem__)  # max keeps the first maximal key
    return max(counts.items(), key=lambda item: (item[1], tie_key(item[0], mode)))[0]


# Join each occurrence of a pair, left to right, never overlapping:
# ``(["a", "a", "a", "</w>"], ("a", "a")) -> ["aa", "a", "</w>"]``.
merge_symbols = merge_pair_in_word


def train_bpe(word_counts: dict[str, int], num_merges: int, mode: str = "char",
              tie: str = "first") -> list[Pair]:
    """Learn up to ``num_merges`` merges; stop early when no word has two symbols left.

    ``({"aaa": 1}, 5) -> [("a", "a"), ("aa", "a"), ("aaa", "</w>")]``: ``aa a </w>`` has two
    pairs counted once each, and ``("aa", "a")`` comes first; then one symbol is left.
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

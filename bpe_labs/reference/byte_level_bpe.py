"""GPT-2 style (byte-level) BPE, as the Hugging Face LLM course trains it in chapter 6.

Text is first pre-tokenized the way GPT-2 does it: split into words with GPT-2's regular
expression, every byte mapped to a printable character, so a leading space shows up as
``Ġ`` (``" is"`` becomes ``"Ġis"``). There is no end-of-word symbol: the space belongs to the
*next* word. Training then works on distinct words weighted by how often they occur:

* the vocabulary starts as ``["<|endoftext|>"]`` followed by the sorted characters of the
  corpus;
* each step counts adjacent pairs inside words, every occurrence weighted by the word's
  frequency, and merges the most frequent pair. On equal counts the pair counted first
  wins (pairs are counted word by word, in the order words first appear in the corpus,
  left to right inside a word): the course's loop keeps the first maximum it meets;
* training stops when the vocabulary has ``vocab_size`` entries or no word has two
  symbols left.

Merges are a dict ``{(a, b): a + b}`` whose insertion order is the order they were learned,
as in the course. This module is the reference the hidden tests of the ``gpt2_bpe`` lab
compare student code against: keep it obviously correct, not fast. The lab's names are kept
here; the work is done by ``base``.

    >>> word_freqs = compute_word_freqs(["ab ab b"])
    >>> word_freqs
    {'ab': 1, 'Ġab': 1, 'Ġb': 1}
    >>> merges, vocab = train_bpe(["ab ab b"], vocab_size=6)
    >>> merges
    {('a', 'b'): 'ab', ('Ġ', 'ab'): 'Ġab'}
    >>> vocab
    ['<|endoftext|>', 'a', 'b', 'Ġ', 'ab', 'Ġab']
    >>> tokenize("b ab", merges)
    ['b', 'Ġab']
"""
from __future__ import annotations

from collections import Counter

from bpe_labs.reference import base
from bpe_labs.reference.base import (
    Pair, apply_merges, count_pairs, most_frequent_pair, pretokenize_gpt2,
)

SPECIAL_TOKEN = "<|endoftext|>"

Splits = dict[str, list[str]]


def pre_tokenize(text: str) -> list[str]:
    """GPT-2's words of ``text``, spaces shown as ``Ġ`` (``base.pretokenize_gpt2``).

    >>> pre_tokenize("a  b.")
    ['a', 'Ġ', 'Ġb', '.']
    """
    return pretokenize_gpt2(text)


def compute_word_freqs(corpus: list[str]) -> dict[str, int]:
    """Count pre-tokenized words over all texts, keys in the order words first appear.

    >>> compute_word_freqs(["a b", "b"])
    {'a': 1, 'Ġb': 1, 'b': 1}
    """
    return dict(Counter(word for text in corpus for word in pre_tokenize(text)))


def build_alphabet(word_freqs: dict[str, int]) -> list[str]:
    """Every character used in the words, once each, sorted.

    >>> build_alphabet({"ba": 2, "Ġa": 1})
    ['a', 'b', 'Ġ']
    """
    return sorted({character for word in word_freqs for character in word})


def initial_splits(word_freqs: dict[str, int]) -> Splits:
    """Each word split into its characters.

    >>> initial_splits({"Ġab": 1})
    {'Ġab': ['Ġ', 'a', 'b']}
    """
    return {word: list(word) for word in word_freqs}


def compute_pair_freqs(splits: Splits, word_freqs: dict[str, int]) -> dict[Pair, int]:
    """Count adjacent pairs inside each word, each occurrence weighted by the word's frequency.

    Keys are in the order pairs are first counted (words in ``word_freqs`` order, left to right).

    >>> compute_pair_freqs({"aaa": ["a", "a", "a"], "ab": ["a", "b"]}, {"aaa": 2, "ab": 1})
    {('a', 'a'): 4, ('a', 'b'): 1}
    """
    return dict(count_pairs((splits[word], freq) for word, freq in word_freqs.items()))


def merge_word(split: list[str], a: str, b: str) -> list[str]:
    """Join each ``a`` followed by ``b``, left to right, never overlapping.

    >>> merge_word(["a", "a", "a"], "a", "a")
    ['aa', 'a']
    """
    return base.merge_pair(split, (a, b))


def merge_pair(a: str, b: str, splits: Splits, word_freqs: dict[str, int]) -> Splits:
    """Apply the merge ``(a, b)`` to the split of every word of ``word_freqs``; return new splits.

    >>> merge_pair("a", "b", {"abab": ["a", "b", "a", "b"]}, {"abab": 1})
    {'abab': ['ab', 'ab']}
    """
    merged = dict(splits)
    for word in word_freqs:
        merged[word] = merge_word(splits[word], a, b)
    return merged


def merge_pair_in_place(a: str, b: str, splits: Splits, word_freqs: dict[str, int]) -> Splits:
    """``merge_pair``, updating ``splits`` itself and returning it: the lab's task allows both, so
    its stand-in does both (a student's ``train_bpe`` may use the value returned, or rely on
    ``splits``).

    >>> splits = {"abab": ["a", "b", "a", "b"]}
    >>> merge_pair_in_place("a", "b", splits, {"abab": 1}) is splits, splits
    (True, {'abab': ['ab', 'ab']})
    """
    splits.update(merge_pair(a, b, splits, word_freqs))
    return splits


def train_bpe(corpus: list[str], vocab_size: int = 50) -> tuple[dict[Pair, str], list[str]]:
    """Learn merges until the vocabulary has ``vocab_size`` entries; return (merges, vocab).

    ``vocab`` is ``["<|endoftext|>"]``, the sorted alphabet, then ``a + b`` for each merge in
    the order learned (the alphabet is never cut, even when it alone exceeds ``vocab_size``).
    Training stops early when no word has two symbols left.
    """
    word_freqs = compute_word_freqs(corpus)
    vocab = [SPECIAL_TOKEN] + build_alphabet(word_freqs)
    splits = initial_splits(word_freqs)
    merges: dict[Pair, str] = {}
    while len(vocab) < vocab_size:
        pair = most_frequent_pair(compute_pair_freqs(splits, word_freqs))
        if pair is None:
            break
        a, b = pair
        splits = merge_pair(a, b, splits, word_freqs)
        merges[pair] = a + b
        vocab.append(a + b)
    return merges, vocab


def tokenize(text: str, merges: dict[Pair, str]) -> list[str]:
    """Pre-tokenize ``text``, split words into characters, apply ``merges`` in order, flatten.

    Characters no merge touches stay as they are (unknown ones included).

    >>> tokenize("ab b", {("a", "b"): "ab"})
    ['ab', 'Ġ', 'b']
    """
    pairs = [(a, b) for a, b in merges]  # in the order learned
    return [token for word in pre_tokenize(text) for token in apply_merges(list(word), pairs)]

"""Turning text into word counts, the input of both BPE trainers in this folder.

BPE never merges across word boundaries, so a trainer only needs each distinct word
once, with how often it occurs. The order of the dict matters: it is the order in which
words first appear in the text, and the tie rule ``"first"`` is defined by it.

Two ways of cutting text into words:

* ``count_words``: split on whitespace (``str.split()``), the character-level labs' words;
* ``count_pretokens``: GPT-2's pre-tokenization, every byte shown as one printable
  character, a leading space as ``Ġ``. ``tokenizers``' ``ByteLevel(add_prefix_space=False)``
  pre-tokenizer reproduces it offline, so nothing is downloaded.

    >>> count_words("the cat the")
    {'the': 2, 'cat': 1}
    >>> count_pretokens("the cat the")
    {'the': 1, 'Ġcat': 1, 'Ġthe': 1}
"""
from __future__ import annotations

import multiprocessing
from collections import Counter

from tokenizers.pre_tokenizers import ByteLevel

_GPT2_PRE_TOKENIZER = ByteLevel(add_prefix_space=False)

# Below this size a second process costs more (fork, pickling the counts back) than it saves.
PARALLEL_MIN_CHARS = 4_000_000


def count_words(text: str) -> dict[str, int]:
    """Whitespace-separated words and their counts, in order of first occurrence.

    ``"b a b" -> {"b": 2, "a": 1}``
    """
    return dict(Counter(text.split()))  # Counter is a dict: it keeps first-insertion order


def pretokenize_gpt2(text: str) -> list[str]:
    """GPT-2's pre-tokens of ``text``: ``"a  b." -> ["a", "Ġ", "Ġb", "."]``."""
    return [piece for piece, _offsets in _GPT2_PRE_TOKENIZER.pre_tokenize_str(text)]


def count_pretokens(text: str) -> dict[str, int]:
    """GPT-2 pre-tokens and their counts, in order of first occurrence.

    ``"a a" -> {"a": 1, "Ġa": 1}``
    """
    return dict(Counter(pretokenize_gpt2(text)))


_TEXT_FOR_CHILD = ""  # set just before forking: the child reads it without a copy through a pipe


def _count_words_from(start: int) -> Counter:
    return Counter(_TEXT_FOR_CHILD[start:].split())


def _whitespace_cut(text: str) -> int:
    """An index near the middle of ``text`` where it can be cut without cutting a word."""
    middle = len(text) // 2
    for cut in range(middle, len(text)):
        if text[cut].isspace():
            return cut
    return len(text)


def count_words_parallel(text: str) -> dict[str, int]:
    """``count_words`` on two cores: a forked child counts the second half.

    The result is the same dict, in the same order: the first half's words in their order,
    then the words that first appear in the second half, in theirs. Falls back to one core
    for short texts or where ``fork`` is not available.

    ``"b a b" -> {"b": 2, "a": 1}``
    """
    global _TEXT_FOR_CHILD
    if len(text) < PARALLEL_MIN_CHARS or "fork" not in multiprocessing.get_all_start_methods():
        return count_words(text)
    cut = _whitespace_cut(text)
    _TEXT_FOR_CHILD = text
    try:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            second_half = pool.apply_async(_count_words_from, (cut,))
            counts = Counter(text[:cut].split())
            counts.update(second_half.get())  # new words are appended: first-occurrence order kept
    finally:
        _TEXT_FOR_CHILD = ""
    return dict(counts)

"""Turning text into word counts, the input of both BPE trainers in this folder.

BPE never merges across word boundaries, so a trainer only needs each distinct word
once, with how often it occurs. The order of the dict matters: it is the order in which
words first appear in the text, and the tie rule ``"first"`` is defined by it.

Two ways of cutting text into words:

* ``count_words``: split on whitespace (``str.split()``), the character-level labs' words;
* ``count_pretokens``: GPT-2's pre-tokenization, every byte shown as one printable
  character, a leading space as ``Ġ``. ``tokenizers``' ``ByteLevel(add_prefix_space=False)``
  pre-tokenizer reproduces it offline, so nothing is downloaded. Special tokens such as
  ``<|endoftext|>`` cut the text first: no pre-token spans one, and none is counted.
  ``split=split_gpt2`` cuts with GPT-2's own regular expression instead (the ``regex`` module,
  as tiktoken and CS336 do): the same pre-tokens, but defined on any Python string (lone
  surrogates too) and with the ``regex`` module's Unicode tables.

``symbol_bytes`` (from ``base``) turns such a printable string back into the bytes it stands
for; the byte-level tie rule compares those bytes (``Ġ`` is U+0120 as a character, 0x20 as a byte).

    >>> count_words("the cat the")
    {'the': 2, 'cat': 1}
    >>> count_pretokens("the cat the")
    {'the': 1, 'Ġcat': 1, 'Ġthe': 1}
    >>> count_pretokens("a<|endoftext|> a", special_tokens=["<|endoftext|>"])
    {'a': 1, 'Ġa': 1}
    >>> symbol_bytes("Ġcaf") + symbol_bytes("Ã©")
    b' caf\\xc3\\xa9'
"""
from __future__ import annotations

import multiprocessing
import re
from collections import Counter
from collections.abc import Callable, Iterable

import regex

from bpe_labs.reference.base import (BYTE_CHARACTERS, BYTE_OF_CHARACTER,  # noqa: F401 (the trainers' names)
                                       pretokenize_gpt2, symbol_bytes)

# GPT-2's split pattern, as tiktoken (r50k_base, "gpt2") and CS336 write it for the ``regex``
# module: contractions, letters with one optional leading space, digits likewise, other symbols
# likewise, whitespace not followed by a non-space (so that the last space goes with the next word),
# whitespace.
# whitespace not followed by a non-space (so that the
# last space goes with the next word), whitespace.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
_GPT2_SPLIT = regex.compile(GPT2_PATTERN)

# Below this size a second process costs more (fork, pickling the counts back) than it saves.
PARALLEL_MIN_CHARS = 4_000_000


def count_words(text: str) -> dict[str, int]:
    """Whitespace-separated words and their counts, in order of first occurrence.

    >>> count_words("b a b")
    {'b': 2, 'a': 1}
    """
    return dict(Counter(text.split()))  # Counter is a dict: it keeps first-insertion order


def split_on_special_tokens(
    text: str, special_tokens: Iterable[str] = (), keep: bool = False
) -> list[str]:
    """The pieces of ``text`` between special tokens, which are dropped (``keep``: kept, each a
    piece of its own, and empty pieces dropped).

    Scanning left to right, a longer special token wins over one it starts with.

    >>> split_on_special_tokens("a<|endoftext|>b", ["<|endoftext|>"])
    ['a', 'b']
    >>> split_on_special_tokens("a<|x|><|x|>b", ["<|x|>", "<|x|><|x|>"])
    ['a', 'b']
    >>> split_on_special_tokens("<|x|>a<|x|><|x|>", ["<|x|>"], keep=True)
    ['<|x|>', 'a', '<|x|>', '<|x|>']
    """
    specials = sorted(set(special_tokens), key=len, reverse=True)
    if not specials:
        return [text] if text or not keep else []
    alternatives = "|".join(map(re.escape, specials))
    if not keep:
        return re.split(alternatives, text)
    return [piece for piece in re.split(f"({alternatives})", text) if piece]


def split_gpt2(text: str) -> list[str]:
    """GPT-2's pre-tokens of ``text`` as text, cut with GPT-2's regular expression
    (``GPT2_PATTERN``).

    >>> split_gpt2("It's  2024!")
    ['It', "'s", ' ', ' 2024', '!']
    """
    return _GPT2_SPLIT.findall(text)


def printable(pretoken: str) -> str:
    """``pretoken``'s UTF-8 bytes, one GPT-2 printable character each (what byte mode trains on).

    >>> printable(" café")
    'ĠcafÃ©'
    """
    return "".join([BYTE_CHARACTERS[byte] for byte in pretoken.encode("utf-8")])


def count_pretokens(text: str, special_tokens: Iterable[str] = (),
                    split: Callable[[str], list[str]] | None = None) -> dict[str, int]:
    """GPT-2 pre-tokens and their counts, in order of first occurrence, in printable characters.

    Special tokens cut the text and are not counted (CS336's rule: nothing is merged
    across them). ``split`` (``split_gpt2``, say) cuts each piece into pre-tokens as text instead
    of ``tokenizers``' ``ByteLevel``.

    >>> count_pretokens("a a")
    {'a': 1, 'Ġa': 1}
    >>> count_pretokens("a a", split=split_gpt2)
    {'a': 1, 'Ġa': 1}
    """
    counts: Counter = Counter()
    for piece in split_on_special_tokens(text, special_tokens):
        counts.update(pretokenize_gpt2(piece) if split is None else map(printable, split(piece)))
    return dict(counts)


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

    >>> count_words_parallel("b a b")
    {'b': 2, 'a': 1}
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

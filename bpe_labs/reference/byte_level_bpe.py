"""GPT-2 style (byte-level) BPE, as the Hugging Face LLM course trains it in chapter 6.

Text is first pre-tokenized the way GPT-2 does it: split into words with GPT-2's regular
expression, every byte mapped to a printable character, so a leading space shows up as
``Ġ`` (``" is" -> "Ġis"``). There is no end-of-word symbol: the space belongs to the
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
compare student code against: keep it obviously correct, not fast.

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

from tokenizers.pre_tokenizers import ByteLevel

# The most frequent pair, on a tie the one counted first (the course's loop): the same rule in every lab.
from bpe_labs.reference.char_bpe import most_frequent_pair

SPECIAL_TOKEN = "<|endoftext|>"

Pair = tuple[str, str]
Splits = dict[str, list[str]]

# GPT-2's pre-tokenizer: the same settings `AutoTokenizer.from_pretrained("gpt2")` uses,
# without downloading anything.
_GPT2_PRE_TOKENIZER = ByteLevel(add_prefix_space=False)


def pre_tokenize(text: str) -> list[str]:
    """GPT-2's words of ``text``, spaces shown as ``Ġ``: ``"a  b." -> ["a", "Ġ", "Ġb", "."]``."""
    return [word for word, _offsets in _GPT2_PRE_TOKENIZER.pre_tokenize_str(text)]


def compute_word_freqs(corpus: list[str]) -> dict[str, int]:
    """Count pre-tokenized words over all texts, keys in the order words first appear.

    ``["a b", "b"] -> {"a": 1, "Ġb": 1, "b": 1}``
    """
    word_freqs: dict[str, int] = {}
    for text in corpus:
        for word in pre_tokenize(text):
            word_freqs[word] = word_freqs.get(word, 0) + 1
    return word_freqs


def build_alphabet(word_freqs: dict[str, int]) -> list[str]:
    """Every character used in the words, once each, sorted: ``{"ba": 2, "Ġa": 1} -> ["a", "b", "Ġ"]``."""
    return sorted({character for word in word_freqs for character in word})


def initial_splits(word_freqs: dict[str, int]) -> Splits:
    """Each word split into its characters: ``{"Ġab": 1} -> {"Ġab": ["Ġ", "a", "b"]}``."""
    return {word: list(word) for word in word_freqs}


def compute_pair_freqs(splits: Splits, word_freqs: dict[str, int]) -> dict[Pair, int]:
    """Count adjacent pairs inside each word, each occurrence weighted by the word's frequency.

    Keys are in the order pairs are first counted (words in ``word_freqs`` order, left to right).

    ``({"aaa": ["a", "a", "a"], "ab": ["a", "b"]}, {"aaa": 2, "ab": 1}) -> {("a", "a"): 4, ("a", "b"): 1}``
    """
    pair_freqs: dict[Pair, int] = {}
    for word, freq in word_freqs.items():
        split = splits[word]
        for pair in zip(split, split[1:]):
            pair_freqs[pair] = pair_freqs.get(pair, 0) + freq
    return pair_freqs


def merge_word(split: list[str], a: str, b: str) -> list[str]:
    """Join each ``a`` followed by ``b``, left to right, never overlapping.

    ``(["a", "a", "a"], "a", "a") -> ["aa", "a"]``
    """
    merged: list[str] = []
    i = 0
    while i < len(split):
        if i + 1 < len(split) and split[i] == a and split[i + 1] == b:
            merged.append(a + b)
            i += 2
        else:
            merged.append(split[i])
            i += 1
    return merged


def merge_pair(a: str, b: str, splits: Splits, word_freqs: dict[str, int]) -> Splits:
    """Apply the merge ``(a, b)`` to the split of every word of ``word_freqs``; return new splits.

    ``("a", "b", {"abab": ["a", "b", "a", "b"]}, {"abab": 1}) -> {"abab": ["ab", "ab"]}``
    """
    merged = dict(splits)
    for word in word_freqs:
        merged[word] = merge_word(splits[word], a, b)
    return merged


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

    ``("ab b", {("a", "b"): "ab"}) -> ["ab", "Ġ", "b"]``
    """
    tokens: list[str] = []
    for word in pre_tokenize(text):
        split = list(word)
        for a, b in merges:
            split = merge_word(split, a, b)
        tokens.extend(split)
    return tokens

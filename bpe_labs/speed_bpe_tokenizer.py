"""Lab 7's two speed rules (``bpe_labs/speed.py`` measures them): each a case, a unit and a limit,
the same in the part's visible check (a copy, checked by ``tests/test_speed_rule.py``) and in its
hidden test (another seed: a case of the same kind, never the one the student saw).

* **train_bpe.** The unit: one pass over the file (:func:`one_pass`: read it, cut it into GPT-2's
  pre-tokens, count the byte pairs of every one). On a file of ``PRETOKENS`` pre-tokens made of
  ``WORDS`` distinct words (:func:`speed_text`), ``MERGES`` merges may take ``TRAIN_MULTIPLE``
  passes. Counting each distinct pre-token once takes one or two (the course's reference trainer
  too); walking every pre-token at every merge, one or two per merge: 50 to 100.
* **encode.** The unit: ``ENCODE_PASSES`` passes over the text (:func:`passes_over`: cut it into
  GPT-2's pre-tokens, every one into its bytes, and look each adjacent pair up in the merges), what
  applying one merge to the whole text costs. With ``ENCODE_MERGES`` merges and a text of
  ``ENCODE_WORDS`` words (:func:`encode_case`), encode may take ``ENCODE_MULTIPLE`` units, that is
  ``ENCODE_MULTIPLE * ENCODE_PASSES`` passes. Merging by rank inside each pre-token takes about 5
  passes; a pass over the text per merge, 150 or more.

    >>> text = speed_text(7)
    >>> len(text.split(" ")), len(set(text.split(" ")))
    (6000, 40)
    >>> vocab, merges, text = encode_case(7)
    >>> len(merges), len(vocab), len(text.split(" ")), max(len(a + b) for a, b in merges)
    (2000, 2256, 1500, 6)
"""
from __future__ import annotations

import random

import regex

PRETOKENS, WORDS, MERGES, TRAIN_MULTIPLE = 6000, 40, 60, 10
# Greek: no word of a hidden case can be mistaken for the text of a message
LETTERS = "αβγδεζηθικλμνξ"
ENCODE_MERGES, ENCODE_WORDS, ENCODE_PASSES, ENCODE_MULTIPLE = 2000, 1500, 5, 10


def speed_text(seed):
    """PRETOKENS pre-tokens made of WORDS distinct words of 3 to 7 letters, joined by spaces."""
    rng = random.Random(seed)
    words = set()
    while len(words) < WORDS:
        words.add("".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 7))))
    words = sorted(words)
    return " ".join(rng.choice(words) for _ in range(PRETOKENS))


def one_pass(path, pattern):
    """train_bpe's unit: one pass over the file, as recounting makes it at every merge: read it, cut
    it into GPT-2's pre-tokens, count the adjacent byte pairs of every pre-token."""
    with open(path, encoding="utf-8") as file:
        text = file.read()
    pairs = {}
    for pretoken in regex.findall(pattern, text):
        data = pretoken.encode("utf-8")
        for pair in zip(data, data[1:]):
            pairs[pair] = pairs.get(pair, 0) + 1
    return pairs


def encode_case(seed):
    """(vocab, merges, text): ENCODE_MERGES merges of random pairs of tokens of lowercase letters
    (at most 6 bytes each), in random order, after the 256 bytes; a text of ENCODE_WORDS words of 1
    to 3 such tokens each, joined by spaces."""
    rng = random.Random(seed)
    tokens = [letter.encode("utf-8") for letter in "abcdefghijklmnopqrstuvwxyz"]
    merges, known = [], set(tokens)
    while len(merges) < ENCODE_MERGES:
        first, second = rng.choice(tokens), rng.choice(tokens)
        if len(first + second) <= 6 and first + second not in known:
            merges.append((first, second))
            known.add(first + second)
            tokens.append(first + second)
    vocab = {byte: bytes([byte]) for byte in range(256)}
    vocab.update({256 + rank: first + second for rank, (first, second) in enumerate(merges)})
    words = [b"".join(rng.choice(tokens) for _ in range(rng.randint(1, 3)))
             for _ in range(ENCODE_WORDS)]
    return vocab, merges, b" ".join(words).decode("utf-8")


def passes_over(text, merge_ranks, pattern):
    """encode's unit: ENCODE_PASSES passes over the text, as applying one merge to all of it makes
    each: cut it into GPT-2's pre-tokens, every one into its bytes, look each adjacent pair up."""
    found = 0
    for _ in range(ENCODE_PASSES):
        for pretoken in regex.findall(pattern, text):
            tokens = [bytes([byte]) for byte in pretoken.encode("utf-8")]
            for pair in zip(tokens, tokens[1:]):
                if pair in merge_ranks:
                    found += 1
    return found

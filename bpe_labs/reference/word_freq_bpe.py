"""Word-frequency BPE on a corpus of documents, as the corpus preparation lab teaches it.

The earlier labs gave every word a count of 1. Here a corpus is a word-frequency
dictionary built from documents (YAML front matter stripped, body lowercased, words
found by ``\\w+``), and BPE is learned the way Sennrich et al. (2016) wrote it: the
vocabulary maps each word, written as space-separated symbols ending in ``</w>``, to
its count, so a pair inside a word that occurs 5 times counts 5. The most frequent pair
is merged first; on equal counts the pair seen first wins when the vocabulary is
scanned in insertion order, each word left to right. This module is the reference the
hidden tests of that lab compare student code against: keep it obviously correct, not fast.
The pairs are counted and merged by ``base``; the vocabulary stays Sennrich's strings.

    >>> merges, vocab = learn_bpe({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 2)
    >>> merges
    [('e', 's'), ('es', 't')]

A protected lexicon keeps some units whole. Named entities are emitted as one token by
``tokenize_protected``. A morpheme that ends a word (``walking`` = ``walk`` + ``ing``,
when at least ``MIN_STEM`` characters come before it) starts as one frozen symbol
``ing</w>`` that no merge ever touches, so no merge crosses the stem/suffix boundary.
"""
from __future__ import annotations

import re
from collections import Counter

import yaml

from bpe_labs.reference import base
from bpe_labs.reference.base import END_OF_WORD, Pair, count_pairs, most_frequent_pair

FRONT_MATTER_DELIMITER = "---"
FRONT_MATTER_FIELDS = ("title", "author", "publisher", "tags", "summary")
MIN_STEM = 3  # "red" and "sing" are not "r" + "ed" and "s" + "ing"

Vocab = dict[str, int]


def split_front_matter(text: str) -> tuple[str | None, str]:
    """Split a document into (front matter source or ``None``, body).

    There is front matter when the first line is exactly ``---`` and a later line is
    exactly ``---``; it is the lines between them and the body is everything after the
    closing line. Otherwise the whole text is the body. The body is stripped.

    >>> split_front_matter("---\\ntitle: A\\n---\\n\\nHi\\n")
    ('title: A', 'Hi')
    >>> split_front_matter("Hi")
    (None, 'Hi')
    """
    lines = text.splitlines()
    if lines and lines[0] == FRONT_MATTER_DELIMITER and FRONT_MATTER_DELIMITER in lines[1:]:
        closing = lines.index(FRONT_MATTER_DELIMITER, 1)
        return "\n".join(lines[1:closing]), "\n".join(lines[closing + 1:]).strip()
    return None, text.strip()


def words_of(text: str) -> list[str]:
    """Lowercase word tokens.

    >>> words_of("Don't STOP")
    ['don', 't', 'stop']
    """
    return re.findall(r"\w+", text.lower())


def process_document(text: str) -> tuple[dict, str, list[str]]:
    """Return (metadata, body, tokens) of one document.

    Metadata is the front matter parsed by ``yaml.safe_load``, ``{}`` when there is none
    or it is empty. Tokens are the body's lowercase words.

    >>> process_document("---\\ntags: [a, b]\\n---\\nHello, World")
    ({'tags': ['a', 'b']}, 'Hello, World', ['hello', 'world'])
    >>> process_document("---\\n---\\nHi")
    ({}, 'Hi', ['hi'])
    """
    front_matter, body = split_front_matter(text)
    metadata = yaml.safe_load(front_matter) if front_matter is not None else None
    return (metadata if metadata is not None else {}), body, words_of(body)


def build_corpus(documents: list[str]) -> dict[str, int]:
    """Count body words over all documents, keys in order of first appearance.

    >>> build_corpus(["---\\ntitle: X\\n---\\nb a b", "a c"])
    {'b': 2, 'a': 2, 'c': 1}
    """
    counts: Counter = Counter()
    for text in documents:
        counts.update(process_document(text)[2])
    return dict(counts)


def word_to_symbols(word: str) -> str:
    """Sennrich's vocabulary key of a word: its symbols joined by spaces.

    >>> word_to_symbols("low")
    'l o w </w>'
    """
    return " ".join(base.word_to_symbols(word))


def initial_vocab(word_freqs: dict[str, int]) -> Vocab:
    """Sennrich's vocabulary of word counts.

    >>> initial_vocab({"low": 5})
    {'l o w </w>': 5}
    """
    return {word_to_symbols(word): count for word, count in word_freqs.items()}


def get_stats(vocab: Vocab) -> dict[Pair, int]:
    """Count adjacent symbol pairs, each word weighted by its count, in scan order.

    >>> get_stats({"a a a </w>": 2, "b a </w>": 1})
    {('a', 'a'): 4, ('a', '</w>'): 3, ('b', 'a'): 1}
    """
    return dict(count_pairs((word.split(), count) for word, count in vocab.items()))


def merge_vocab(pair: Pair, vocab: Vocab) -> Vocab:
    """Join every occurrence of ``pair`` (two whole symbols) into one symbol, left to right.

    The pattern matches ``"e s"`` only between spaces or the ends of the word, so it
    leaves ``"e st"`` and ``"ne s"`` alone; ``re.escape`` makes ``.`` or ``+`` literal, and
    a function replacement keeps a ``\\`` in the symbol literal.

    >>> merge_vocab(("e", "s"), {"n e w e s t </w>": 6, "e st </w>": 1})
    {'n e w es t </w>': 6, 'e st </w>': 1}
    """
    pattern = re.compile(r"(?<!\S)" + re.escape(" ".join(pair)) + r"(?!\S)")
    merged = pair[0] + pair[1]
    return {pattern.sub(lambda _: merged, word): count for word, count in vocab.items()}


def learn_bpe(word_freqs: dict[str, int], num_merges: int) -> tuple[list[Pair], Vocab]:
    """Learn up to ``num_merges`` merges from word counts; return (merges, final vocab).

    Stops early when no word has two symbols left.

    >>> learn_bpe({"ab": 1, "cd": 3}, 1)
    ([('c', 'd')], {'a b </w>': 1, 'cd </w>': 3})
    """
    vocab = initial_vocab(word_freqs)
    merges: list[Pair] = []
    for _ in range(num_merges):
        pair = most_frequent_pair(get_stats(vocab))
        if pair is None:
            break
        merges.append(pair)
        vocab = merge_vocab(pair, vocab)
    return merges, vocab


# Apply merges in the order learned (``base.apply_merges``).
apply_merges = base.apply_merges


def tokenize(text: str, merges: list[Pair]) -> list[str]:
    """Plain BPE tokens of the lowercase words of ``text``.

    >>> tokenize("Ab", [("a", "b")])
    ['ab', '</w>']
    """
    return [token for word in words_of(text)
            for token in apply_merges(base.word_to_symbols(word), merges)]


# --- the protected lexicon -------------------------------------------------------------


def split_suffix(word: str, morphemes: list[str]) -> tuple[str, str]:
    """Split off the longest morpheme that ends ``word`` with at least ``MIN_STEM`` characters
    before it.

    >>> split_suffix("walking", ["ing", "ed"])
    ('walk', 'ing')
    >>> split_suffix("sing", ["ing"])
    ('sing', '')
    """
    for morpheme in sorted(morphemes, key=len, reverse=True):
        if morpheme and word.endswith(morpheme) and len(word) - len(morpheme) >= MIN_STEM:
            return word[: -len(morpheme)], morpheme
    return word, ""


def protected_symbols(word: str, morphemes: list[str]) -> str:
    """Vocabulary key with the suffix as one symbol.

    >>> protected_symbols("walking", ["ing"])
    'w a l k ing</w>'
    """
    stem, suffix = split_suffix(word, morphemes)
    if suffix:
        return " ".join(list(stem) + [suffix + END_OF_WORD])
    return word_to_symbols(word)


def learn_bpe_protected(
    word_freqs: dict[str, int], num_merges: int, morphemes: list[str]
) -> tuple[list[Pair], Vocab]:
    """``learn_bpe`` where suffix symbols such as ``ing</w>`` are frozen: no merge involves one.

    >>> learn_bpe_protected({"walking": 2, "talking": 1}, 1, ["ing"])
    ([('a', 'l')], {'w al k ing</w>': 2, 't al k ing</w>': 1})
    """
    frozen = {morpheme + END_OF_WORD for morpheme in morphemes if morpheme}
    vocab = {protected_symbols(word, morphemes): count for word, count in word_freqs.items()}
    merges: list[Pair] = []
    for _ in range(num_merges):
        stats = {p: c for p, c in get_stats(vocab).items() if p[0] not in frozen
                 and p[1] not in frozen}
        pair = most_frequent_pair(stats)
        if pair is None:
            break
        merges.append(pair)
        vocab = merge_vocab(pair, vocab)
    return merges, vocab


def entity_words(entity: str) -> list[str]:
    """How an entity is matched: its lowercase words.

    >>> entity_words("Port Halden")
    ['port', 'halden']
    """
    return words_of(entity)


def tokenize_protected(
    text: str, merges: list[Pair], entities: list[str], morphemes: list[str]
) -> list[str]:
    """Tokenize the lowercase words of ``text``, keeping entities and suffixes whole.

    Scanning the words left to right, where the next words spell an entity (the one with
    most words wins), emit the entity's words joined by one space plus ``</w>`` as one
    token. Any other word is split by ``split_suffix``: merges apply to the stem's
    characters and the suffix follows as ``suffix + "</w>"``; a word without suffix is
    tokenized as usual (characters and ``</w>``).

    >>> tokenize_protected("Port Halden walking", [("a", "l")], ["port halden"], ["ing"])
    ['port halden</w>', 'w', 'al', 'k', 'ing</w>']
    """
    entity_list = sorted((entity_words(e) for e in entities), key=len, reverse=True)
    entity_list = [e for e in entity_list if e]
    words = words_of(text)
    tokens: list[str] = []
    i = 0
    while i < len(words):
        entity = next((e for e in entity_list if words[i : i + len(e)] == e), None)
        if entity is not None:
            tokens.append(" ".join(entity) + END_OF_WORD)
            i += len(entity)
            continue
        stem, suffix = split_suffix(words[i], morphemes)
        if suffix:
            tokens.extend(apply_merges(list(stem), merges) + [suffix + END_OF_WORD])
        else:
            tokens.extend(apply_merges(list(stem) + [END_OF_WORD], merges))
        i += 1
    return tokens

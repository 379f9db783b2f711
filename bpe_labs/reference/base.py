"""The primitives every BPE of this folder is built from, each written once (as minbpe keeps them in
``base.py``).

Each lab's reference module keeps the names and signatures its lab teaches and calls these.

* symbols and pairs: ``word_to_symbols``, ``count_pairs``, ``merge_pair``, ``apply_merges``;
* the tie rules: ``most_frequent_pair``;
* GPT-2's byte level: ``pretokenize_gpt2``, ``BYTE_CHARACTERS``, ``BYTE_OF_CHARACTER``,
  ``symbol_bytes``.

    >>> words = [(word_to_symbols("low"), 2), (word_to_symbols("lower"), 1)]
    >>> pair = most_frequent_pair(count_pairs(words))
    >>> pair
    ('l', 'o')
    >>> merge_pair(words[0][0], pair)
    ['lo', 'w', '</w>']
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from tokenizers.pre_tokenizers import ByteLevel

END_OF_WORD = "</w>"

Pair = tuple[str, str]


def word_to_symbols(word: str) -> list[str]:
    """A word's characters followed by the separate end-of-word symbol ``</w>``.

    >>> word_to_symbols("low")
    ['l', 'o', 'w', '</w>']
    """
    return list(word) + [END_OF_WORD]


def count_pairs(words: Iterable[tuple[Sequence[str], int]]) -> Counter:
    """Count adjacent pairs inside each ``(symbols, weight)`` entry, adding its weight each time.

    Pairs are never counted across two entries. The keys are in the order pairs are first
    met, entries in order and each left to right: the order the tie rule "first" relies on.

    >>> counts = count_pairs([(["b", "a", "a", "a"], 2), (["a", "b"], 1)])
    >>> counts
    Counter({('a', 'a'): 4, ('b', 'a'): 2, ('a', 'b'): 1})
    >>> list(counts)  # first met first
    [('b', 'a'), ('a', 'a'), ('a', 'b')]
    """
    counts: Counter = Counter()
    for symbols, weight in words:
        for pair in zip(symbols, symbols[1:]):
            counts[pair] += weight
    return counts


def merge_pair(symbols: Sequence[str], pair: Pair) -> list[str]:
    """Replace each occurrence of ``pair`` by the joined symbol, left to right, never overlapping.

    ``pair`` is compared as a tuple: a list never matches.

    >>> merge_pair(["a", "a", "a", "</w>"], ("a", "a"))
    ['aa', 'a', '</w>']
    >>> merge_pair(["a", "b", "a", "b"], ("a", "b"))
    ['ab', 'ab']
    """
    merged: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            merged.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return merged


def apply_merges(symbols: Sequence[str], merges: Iterable[Pair]) -> list[str]:
    """Apply ``merges`` one after the other, in the order they were learned.

    >>> apply_merges(["a", "b", "c", "</w>"], [("b", "c"), ("a", "bc")])
    ['abc', '</w>']
    >>> apply_merges(["a", "b", "c"], [("a", "bc"), ("b", "c")])  # ("a", "bc") came too early
    ['a', 'bc']
    """
    symbols = list(symbols)
    for pair in merges:
        symbols = merge_pair(symbols, pair)
    return symbols


def most_frequent_pair(
    counts: Mapping[Pair, int], tie_key: Callable[[Pair], object] | None = None
) -> Pair | None:
    """The pair with the highest count; ``None`` when no count is positive.

    On equal counts the pair counted first wins (the first of them in ``counts``' order), or,
    given ``tie_key``, the pair whose ``tie_key(pair)`` is greatest.

    >>> counts = {("e", "f"): 1, ("a", "b"): 2, ("c", "d"): 2}
    >>> most_frequent_pair(counts)  # counted first
    ('a', 'b')
    >>> most_frequent_pair(counts, tie_key=lambda pair: pair)  # the greater pair
    ('c', 'd')
    >>> most_frequent_pair({}) is None, most_frequent_pair({("a", "b"): 0}) is None
    (True, True)
    """
    if not counts:
        return None
    if tie_key is None:
        best = max(counts, key=counts.__getitem__)  # max keeps the first maximal key
    else:
        best = max(counts, key=lambda pair: (counts[pair], tie_key(pair)))
    return best if counts[best] > 0 else None


# -- GPT-2's byte level --------------------------------------------------------------------

# GPT-2's pre-tokenizer: the settings `AutoTokenizer.from_pretrained("gpt2")` uses, without
# downloading anything.
_GPT2_PRE_TOKENIZER = ByteLevel(add_prefix_space=False)


def pretokenize_gpt2(text: str) -> list[str]:
    """GPT-2's pre-tokens of ``text``, every byte shown as one printable character, a space as
    ``Ġ``.

    >>> pretokenize_gpt2("a  b.")
    ['a', 'Ġ', 'Ġb', '.']
    >>> pretokenize_gpt2(" is café")
    ['Ġis', 'ĠcafÃ©']
    """
    return [piece for piece, _offsets in _GPT2_PRE_TOKENIZER.pre_tokenize_str(text)]


def gpt2_byte_characters() -> list[str]:
    """The printable character GPT-2 shows for each byte 0..255 (its ``bytes_to_unicode``).

    Bytes that print as themselves in Latin-1 (``!``..``~``, ``¡``..``¬``, ``®``..``ÿ``) keep
    their character; the other 68 (controls, space, 0x7F..0xA0, soft hyphen) take U+0100,
    U+0101, ... in byte order: the space, 0x20, is the 33rd, ``Ġ`` (U+0120).

    >>> characters = gpt2_byte_characters()
    >>> characters[0], characters[ord(" ")], characters[ord("a")], characters[0xE9]
    ('Ā', 'Ġ', 'a', 'é')
    >>> sorted(characters) == sorted(ByteLevel.alphabet())
    True
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    characters, next_free = [], 256
    for byte in range(256):
        if byte in printable:
            characters.append(chr(byte))
        else:
            characters.append(chr(next_free))
            next_free += 1
    return characters


BYTE_CHARACTERS = gpt2_byte_characters()
BYTE_OF_CHARACTER = {character: byte for byte, character in enumerate(BYTE_CHARACTERS)}


def symbol_bytes(symbol: str) -> bytes:
    """The bytes a byte-level symbol stands for.

    Raises ``KeyError`` on a character that is not one of GPT-2's 256 byte characters.

    >>> symbol_bytes("Ġa")
    b' a'
    >>> symbol_bytes("Ã©").decode()
    'é'
    """
    return bytes([BYTE_OF_CHARACTER[character] for character in symbol])

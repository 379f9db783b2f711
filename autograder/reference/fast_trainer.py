"""A fast BPE trainer in pure Python, merge for merge the same as ``simple_trainer``.

``simple_trainer`` recounts every pair of every word after each merge. Almost all of that
work is wasted: a merge of ``(a, b)`` only changes the words that contain ``a b``, and in
those only the pairs touching each merged spot. This trainer keeps

* ``pair_counts``: the weighted count of every pair, updated by differences only;
* ``words_with``: for every pair, the ids of the words that may contain it (a superset:
  stale ids are harmless, they are skipped at C speed);
* a heap of ``(-count, first_seen_lower_bound, pair)`` with lazy invalidation: an entry
  whose count is out of date is dropped or pushed again with the right count when it
  reaches the top.

The speed comes from doing the per-word work with ``str`` methods that run in C. Every
symbol is one character of a private alphabet (a merged symbol gets a fresh character),
so a word is a ``str`` and merging ``a b`` in a batch of words is one
``SEP.join(words).replace(a + b, z)``, which is exactly "left to right, never
overlapping". The pairs around the merged spots are read with one regular expression
(the character after each ``z``, and the one before it, in the reversed string); only the
few distinct neighbours are handled in Python.

Ties (``tie="first"``) need care, because merges remove occurrences: the pair seen first
in corpus order is the one whose *current* first occurrence ``(word index, position)`` is
smallest. We key each occurrence by its character offset in the corpus of distinct words
(it never moves when merges happen around it), keep in the heap a lower bound of each
pair's first offset, and compute the exact one (a scan of the pair's words) only when two
pairs actually tie for the highest count. Bounds only grow as occurrences disappear; a
pair that gains occurrences (new pairs, or an old symbol made again by another merge,
``("a", "bc")`` after ``("ab", "c")``) is pushed with the bound 0.

    >>> train_bpe({"low": 2, "lower": 1}, 3)
    [('l', 'o'), ('lo', 'w'), ('low', '</w>')]
    >>> train_bpe({"low": 2, "lower": 1}, 2, verbose=True)
    merge 1/2: ('l', 'o') -> 'lo' (count 3)
    merge 2/2: ('lo', 'w') -> 'low' (count 3)
    [('l', 'o'), ('lo', 'w')]
"""
from __future__ import annotations

import re
from collections import Counter
from heapq import heapify, heappop, heappush
from itertools import accumulate, chain, compress, repeat
from operator import add, eq, itemgetter, ne

from autograder.reference.pretokenize import count_pretokens, count_words_parallel
from autograder.reference.simple_trainer import END_OF_WORD, Pair, check_arguments

_SURROGATES = range(0xD800, 0xE000)
_OUTSIDE_BMP = re.compile("[\U00010000-\U0010FFFF]")
_FIRST_CHARACTER = itemgetter(slice(None, 1))  # "" for ""
_LAST_CHARACTER = itemgetter(slice(-1, None))
_FIRST_PRIVATE_CHAR = 0x100  # below it, Python caches one-character strings: keep those for text


def _pick_ids(where: tuple) -> list[int]:
    """The ids of the spots whose neighbour is ``neighbour``, each word once.

    ``(([3, 5, 5, 8], ["x", "y", "x", "x"], "x", True)) -> [3, 5, 8]``
    """
    spot_ids, neighbours, neighbour, repeated = where
    ids = [*compress(spot_ids, map(eq, neighbours, repeat(neighbour)))]
    return [*dict.fromkeys(ids)] if repeated else ids


class _Alphabet:
    """Symbols <-> one-character codes.

    A character of the corpus is its own code when it is in the Basic Multilingual Plane;
    others (emoji) get a code there too, so that every word is a 2-byte-per-character
    ``str``. Codes for merged symbols are handed out from unused characters.

    ``_Alphabet({"a", "b"}).new_code("ab")`` -> a character ``c`` with ``symbol[c] == "ab"``.
    """

    def __init__(self, characters: set[str]):
        self.taken = set(characters)
        self.symbol: dict[str, str] = {}  # code -> symbol string
        self.code: dict[str, str] = {}  # symbol string -> code
        self.length: dict[str, int] = {}  # code -> len(symbol): the same however it was made
        self.translation: dict[int, str] = {}  # str.translate table for characters re-coded
        self._next = _FIRST_PRIVATE_CHAR
        for character in sorted(characters):
            code = character if character <= "\uffff" else self.fresh()
            if code != character:
                self.translation[ord(character)] = code
            self._add(code, character)

    def fresh(self) -> str:
        """A character neither in the corpus nor handed out before."""
        while True:
            point = self._next
            self._next += 1
            if point in _SURROGATES:
                continue
            character = chr(point)
            if character not in self.taken:
                self.taken.add(character)
                return character

    def _add(self, code: str, symbol: str) -> str:
        self.symbol[code] = symbol
        self.code[symbol] = code
        self.length[code] = len(symbol)
        return code

    def new_base(self, symbol: str) -> str:
        """A code for a base symbol that is not a corpus character (the end-of-word mark)."""
        return self._add(self.fresh(), symbol)

    def new_code(self, symbol: str) -> str:
        return self._add(self.fresh(), symbol)


class _Trainer:
    """State of one training run; ``train_bpe`` below is the interface."""

    def __init__(self, word_counts: dict[str, int], mode: str, tie: str):
        self.tie = tie
        original_words = list(word_counts)
        alphabet = _Alphabet(set("".join(original_words)))
        self.alphabet = alphabet
        self.sep = alphabet.fresh()  # separates words in joined batches; never part of a pair
        self.temp = alphabet.fresh()  # stands for a merged symbol that already had a code
        # All words in one string, so that re-coding and the end-of-word mark run in C.
        sep = self.sep
        joined = sep.join(original_words)
        if alphabet.translation:
            joined = _OUTSIDE_BMP.sub(lambda match: alphabet.translation[ord(match[0])], joined)
        end_length = 0
        if mode == "char":
            end = alphabet.new_base(END_OF_WORD)
            end_length = len(END_OF_WORD)
            joined = joined.replace(sep, end + sep) + end
        words = joined.split(sep)
        del joined
        self.weight = list(word_counts.values())
        self.words = dict(enumerate(words))
        # Offset of each word in the text of distinct words, each written out in symbols
        # ("low</w>"), +1 between words: first occurrences compare as (word index, position
        # in the word) by one integer, and that position never moves when symbols merge.
        self.word_start = [*accumulate(map(add, map(len, original_words), repeat(end_length + 1)), initial=0)]
        self.pair_counts, self.words_with = self._count_pairs(words)
        self.first_seen: dict[str, int] = {}  # pair -> exact first offset, while unchanged
        if tie == "first":
            self.heap = [(-count, 0, pair) for pair, count in self.pair_counts.items()]
        else:
            self.heap = [(-count, self._lexicographic_key(pair), pair)
                         for pair, count in self.pair_counts.items()]
        heapify(self.heap)

    def _count_pairs(self, words: list[str]) -> tuple[dict[str, int], dict[str, list[int]]]:
        """Weighted pair counts and, for every pair, the ids of the words containing it.

        Words of equal count are counted together in one joined string (in C); pairs
        with the separator are dropped.
        """
        sep = self.sep
        by_weight: dict[int, list[str]] = {}
        for word, weight in zip(words, self.weight):
            by_weight.setdefault(weight, []).append(word)
        pair_counts: dict[str, int] = {}
        for weight, group in by_weight.items():
            joined = sep.join(group)
            for pair, count in Counter(map(add, joined, joined[1:])).items():
                if sep not in pair:
                    pair_counts[pair] = pair_counts.get(pair, 0) + count * weight
        words_with: dict[str, list[int]] = {pair: [] for pair in pair_counts}
        for index, word in enumerate(words):
            for pair in set(map(add, word, word[1:])):
                words_with[pair].append(index)
        return pair_counts, words_with

    def _lexicographic_key(self, pair: str) -> tuple:
        """A heap key that puts the greatest ``(a, b)`` first: code points negated.

        ``("ab", "c")`` -> ``((-97, -98, 1), (-99, 1))``; the trailing 1 makes a longer
        string (greater) sort before its prefix.
        """
        symbol = self.alphabet.symbol
        return tuple(tuple([-ord(ch) for ch in symbol[code]] + [1]) for code in pair)

    def word_ids(self, pair: str) -> list[int]:
        """Sorted ids of the words that may contain ``pair`` (picked out now if still lazy)."""
        ids = self.words_with[pair]
        if type(ids) is tuple:
            ids = self.words_with[pair] = _pick_ids(ids)
        return ids

    def first_offset(self, pair: str) -> int:
        """Exact offset of the first occurrence of ``pair`` in corpus order (cached).

        The pair's word ids are sorted, so the first id whose word still contains the
        pair is its first word; ids before it are stale and dropped.
        """
        offset = self.first_seen.get(pair)
        if offset is not None:
            return offset
        ids = self.word_ids(pair)
        for position, word in enumerate(map(self.words.__getitem__, ids)):
            if pair in word:
                break
        else:
            raise AssertionError(f"pair {pair!r} counted but in no word")
        if position:
            self.words_with[pair] = ids[position:]
        length = self.alphabet.length
        offset = self.word_start[ids[position]] + sum(map(length.__getitem__, word[:word.find(pair)]))
        self.first_seen[pair] = offset
        return offset

    def best_pair(self) -> str | None:
        """Pop the pair to merge next from the heap (``None`` when no pair is left)."""
        heap, counts = self.heap, self.pair_counts
        while heap:
            negative, bound, pair = heappop(heap)
            count = counts.get(pair, 0)
            if count == -negative:
                break
            if 0 < count < -negative:  # went down since pushed: file it again
                heappush(heap, (-count, bound, pair))
        else:
            return None
        if self.tie != "first":
            return pair  # lexicographic keys are exact
        # Other entries may carry the same count: the pair whose first occurrence is
        # earliest wins. Offsets are computed only once a second pair really has it.
        best, best_offset = pair, None
        while heap and heap[0][0] == negative:
            bound, other = heap[0][1], heap[0][2]
            if best_offset is not None and bound >= best_offset:
                break  # every pair left at this count is first seen later
            heappop(heap)
            count = counts.get(other, 0)
            if other == best or count != -negative:
                if other != best and 0 < count < -negative:
                    heappush(heap, (-count, bound, other))
                continue
            if best_offset is None:
                best_offset = self.first_offset(best)
            offset = self.first_offset(other)
            if offset < best_offset:
                heappush(heap, (negative, best_offset, best))
                best, best_offset = other, offset
            else:
                heappush(heap, (negative, offset, other))
        return best

    def merge(self, pair: str) -> None:
        """Merge ``pair`` in every word containing it and update counts, index and heap."""
        alphabet, sep = self.alphabet, self.sep
        a, b = pair
        symbol = alphabet.symbol[a] + alphabet.symbol[b]
        existing = alphabet.code.get(symbol)  # the same string made by an earlier merge
        z = self.temp if existing is not None else alphabet.new_code(symbol)
        counts, words, words_with = self.pair_counts, self.words, self.words_with
        del counts[pair]
        self.first_seen.pop(pair, None)
        ids = self.word_ids(pair)
        del words_with[pair]
        old = [*map(words.__getitem__, ids)]
        joined = sep.join(old).replace(pair, z)
        new = joined.split(sep)
        changed_flags = [*map(ne, old, new)]
        changed = [*compress(ids, changed_flags)]  # still sorted: ids are
        if not changed:
            return
        new_words = [*compress(new, changed_flags)]
        # The word id and weight of each merged spot, in the order of `joined`.
        weights = [*map(self.weight.__getitem__, changed)]
        # Around spot i: parts[i] ends with its left neighbour, parts[i + 1] starts with
        # its right one; an empty part between two spots means "z z".
        parts = joined.split(z)
        if len(parts) - 1 == len(changed):  # one spot per word, the usual case
            spot_ids, spot_weights = changed, weights
        else:
            spots_per_word = [*map(str.count, new_words, repeat(z))]
            spot_ids = [*chain.from_iterable(map(repeat, changed, spots_per_word))]
            spot_weights = [*chain.from_iterable(map(repeat, weights, spots_per_word))]
        if not parts[0]:
            parts[0] = sep  # the first word starts with z: nothing on its left
        left = [*map(_LAST_CHARACTER, parts[:-1])]  # "" is z: "b a" -> "z z"
        right = [*map(_FIRST_CHARACTER, parts[1:])]  # "" is z (counted as a left) or the end
        delta: dict[str, int] = {}
        # New pair -> where it was made, as (spot_ids, neighbours, neighbour, repeated): its
        # word ids are the spot ids whose neighbour is that one. Most new pairs are never
        # merged, so the ids are picked out only when needed (`word_ids`).
        repeated = spot_ids is not changed  # a word with two spots is listed twice
        made_in: dict[str, tuple] = {}
        # Left neighbour x: pair (x, a) is gone, (x, z) is new.
        for (x, weight), n in Counter(zip(left, spot_weights)).items():
            if x == sep:
                continue
            gone, made = (x + a, x + z) if x else (b + a, z + z)
            n *= weight
            delta[gone] = delta.get(gone, 0) - n
            delta[made] = delta.get(made, 0) + n
            made_in[made] = (spot_ids, left, x, repeated)
        # Right neighbour y: pair (b, y) is gone, (z, y) is new.
        for (y, weight), n in Counter(zip(right, spot_weights)).items():
            if y and y != sep:
                n *= weight
                gone, made = b + y, z + y
                delta[gone] = delta.get(gone, 0) - n
                delta[made] = delta.get(made, 0) + n
                made_in[made] = (spot_ids, right, y, repeated)
        if existing is not None:
            new_words = [word.replace(z, existing) for word in new_words]
            # (existing, z) and (z, z) both become (existing, existing): add them up.
            renamed: dict[str, int] = {}
            for gone_or_made, d in delta.items():
                key = gone_or_made.replace(z, existing)
                renamed[key] = renamed.get(key, 0) + d
            delta = renamed
            made_in_renamed: dict[str, list[int]] = {}
            for made, where in made_in.items():
                key = made.replace(z, existing)
                made_in_renamed[key] = sorted({*made_in_renamed.get(key, ()), *_pick_ids(where)})
            made_in = made_in_renamed
            z = existing
        words.update(zip(changed, new_words))
        heap, first_seen = self.heap, self.first_seen
        lexicographic = self.tie != "first"
        for other, d in delta.items():
            if other == pair:
                continue  # "a a a": the overlapping "a a" is gone with the merged pair
            where = made_in.get(other)
            if where is None and not d:
                continue
            first_seen.pop(other, None)
            count = counts.get(other, 0) + d
            if count:
                counts[other] = count
            else:
                counts.pop(other, None)
            if where is not None:  # a pair with z: new, or made again (then it may come earlier)
                if other in words_with:
                    where = sorted({*self.word_ids(other), *where})
                words_with[other] = where
                if count:
                    heappush(heap, (-count, self._lexicographic_key(other) if lexicographic else 0, other))

    def merged_pair(self, pair: str) -> Pair:
        symbol = self.alphabet.symbol
        return symbol[pair[0]], symbol[pair[1]]


def train_bpe(word_counts: dict[str, int], num_merges: int, mode: str = "char",
              tie: str = "first", verbose: bool = False) -> list[Pair]:
    """Learn up to ``num_merges`` merges, exactly as ``simple_trainer.train_bpe`` does.

    ``verbose`` prints one line per merge: ``merge 12/1000: ('e', '</w>') -> 'e</w>' (count 4821)``.

    ``({"aaa": 1}, 5) -> [("a", "a"), ("aa", "a"), ("aaa", "</w>")]``
    """
    check_arguments(word_counts, num_merges, mode, tie)
    merges: list[Pair] = []
    if num_merges == 0 or not word_counts:
        return merges
    trainer = _Trainer(word_counts, mode, tie)
    for step in range(1, num_merges + 1):
        pair = trainer.best_pair()
        if pair is None:
            break
        merged = trainer.merged_pair(pair)
        if verbose:
            print(f"merge {step}/{num_merges}: {merged} -> {merged[0] + merged[1]!r} "
                  f"(count {trainer.pair_counts[pair]})")
        trainer.merge(pair)
        merges.append(merged)
    return merges


def train_bpe_on_text(text: str, num_merges: int, mode: str = "char", tie: str = "first",
                      verbose: bool = False) -> list[Pair]:
    """Count the words of ``text`` (both cores for long texts), then ``train_bpe``.

    ``("low low lower", 1) -> [("l", "o")]``
    """
    word_counts = count_words_parallel(text) if mode == "char" else count_pretokens(text)
    return train_bpe(word_counts, num_merges, mode, tie, verbose)

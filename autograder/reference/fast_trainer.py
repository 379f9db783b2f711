"""A fast BPE trainer in pure Python, merge for merge the same as ``simple_trainer``.

``simple_trainer`` recounts every pair of every word after each merge. Almost all of that
work is wasted: a merge of ``(a, b)`` only changes the words that contain ``a b``, and in
those only the pairs touching each merged spot. This trainer keeps

* ``pair_counts``: the weighted count of every pair, updated by differences only;
* ``words_with``: for every pair, the sorted ids of the words that may contain it (stale
  ids are harmless: they are skipped at C speed);
* a heap of ``(-count, first-occurrence lower bound, pair)`` with lazy invalidation: an
  entry whose count went down is pushed again with the right count when it reaches the top.

Speed comes from doing the per-word work with ``str`` methods, which run in C. Every
symbol is one character of a private alphabet (a merged symbol gets a fresh character),
so a word is a ``str``, and merging ``a b`` in all the words that contain it is one
``SEP.join(words).replace(a + b, z)``: exactly "left to right, never overlapping".
``joined.split(z)`` then gives the neighbour on each side of every merged spot; only the
few distinct neighbours are handled in Python. Word ids go by decreasing count, so the
spots of words counted once or twice are counted by ``Counter`` without weights. The word
ids of a new pair are picked out of the spots only if that pair is ever merged.

Ties (``tie="first"``) need care, because merges remove occurrences: the pair seen first
in corpus order is the one whose *current* first occurrence ``(word, position)`` comes
first. An occurrence is keyed by its character offset in the text of distinct words,
which does not move when symbols around it merge. The heap holds a lower bound of each
pair's first offset; the exact offset (a scan of the pair's words) is computed only when
two pairs really tie for the highest count. Bounds stay valid as occurrences disappear; a
pair that gains occurrences (a new pair, or one with a merged symbol that some earlier
merge made already, like the text "</w>" becoming the end-of-word symbol) is pushed with
the bound 0.

    >>> train_bpe({"low": 2, "lower": 1}, 3)
    [('l', 'o'), ('lo', 'w'), ('low', '</w>')]
    >>> train_bpe({"low": 2, "lower": 1}, 2, verbose=True)
    merge 1/2: ('l', 'o') -> 'lo' (count 3)
    merge 2/2: ('lo', 'w') -> 'low' (count 3)
    [('l', 'o'), ('lo', 'w')]
"""
from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter, defaultdict, deque
from heapq import heapify, heappop, heappush
from itertools import accumulate, chain, compress, repeat
from operator import add, contains, itemgetter, neg

from autograder.reference.pretokenize import count_pretokens, count_words, count_words_parallel
from autograder.reference.simple_trainer import END_OF_WORD, Pair, check_arguments

_SURROGATES = range(0xD800, 0xE000)
_OUTSIDE_BMP = re.compile("[\U00010000-\U0010FFFF]")
_FIRST_CHARACTER = itemgetter(slice(None, 1))  # "" for ""
_LAST_CHARACTER = itemgetter(slice(-1, None))
_FIRST_PRIVATE_CHAR = 0x100  # below it, Python caches one-character strings: keep those for text


class _Spots:
    """The spots of one merge and one neighbour of each: where its new pairs were made.

    The word ids of the new pair ``(x, z)`` are the ids of the spots whose left neighbour
    is ``x``. Most new pairs are never merged, so the spots are grouped by neighbour only
    the first time one of them is asked for (in C, like ``_Trainer._index_pairs``).

    ``_Spots([3, 5, 5, 8], ["x", "y", "x", "x"]).word_ids("x") -> [3, 5, 8]``
    """

    __slots__ = ("spot_ids", "neighbours", "groups")

    def __init__(self, spot_ids: list[int], neighbours: list[str]):
        self.spot_ids, self.neighbours = spot_ids, neighbours
        self.groups: dict[str, list[int]] | None = None

    def word_ids(self, neighbour: str) -> list[int]:
        if self.groups is None:
            groups: dict[str, list[int]] = defaultdict(list)
            deque(map(list.append, map(groups.__getitem__, self.neighbours), self.spot_ids), maxlen=0)
            self.groups, self.spot_ids, self.neighbours = groups, None, None
        ids = self.groups[neighbour]
        return [*dict.fromkeys(ids)]  # a word with two spots is listed twice, side by side


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
    """State of one training run; ``train_bpe`` below is the interface.

    Word ids go by decreasing count (ties in corpus order), so that in a sorted list of
    ids the words of count 1 and 2 come last, in one stretch each: their spots are
    counted by a plain ``Counter``, without weights.
    """

    def __init__(self, word_counts: dict[str, int], mode: str, tie: str):
        self.tie = tie
        corpus_words = list(word_counts)
        corpus_counts = list(word_counts.values())
        order = sorted(range(len(corpus_words)), key=corpus_counts.__getitem__, reverse=True)  # stable
        alphabet = _Alphabet(set("".join(corpus_words)))
        self.alphabet = alphabet
        sep = self.sep = alphabet.fresh()  # separates words in joined batches; never part of a pair
        self.temp = alphabet.fresh()  # stands for a merged symbol that already had a code
        end_length = 0
        end = ""
        if mode == "char":
            end = alphabet.new_base(END_OF_WORD)
            end_length = len(END_OF_WORD)
        # Offset of each word in the text of distinct words in corpus order, each written
        # out in symbols ("low</w>"), +1 between words: a first occurrence is then one
        # integer, and it does not move when symbols around it merge.
        corpus_start = [*accumulate(map(add, map(len, corpus_words), repeat(end_length + 1)), initial=0)]
        self.word_start = [*map(corpus_start.__getitem__, order)]
        self.weight = [*map(corpus_counts.__getitem__, order)]
        # Ids [0, heavy_end) have counts above 2, then count 2 up to light_end, then count 1.
        self.heavy_end = bisect_left(self.weight, -2, key=neg)
        self.light_end = bisect_left(self.weight, -1, key=neg)
        # All words in one string, so that re-coding and the end-of-word mark run in C.
        joined = sep.join(map(corpus_words.__getitem__, order))
        if alphabet.translation:
            joined = _OUTSIDE_BMP.sub(lambda match: alphabet.translation[ord(match[0])], joined)
        if end:
            joined = joined.replace(sep, end + sep) + end
        self.words = joined.split(sep)
        self._index_pairs(joined, self.words)
        del joined
        self.first_seen: dict[str, int] = {}  # pair -> exact first offset, while unchanged
        if tie == "first":
            self.heap = [(-count, 0, pair) for pair, count in self.pair_counts.items()]
        else:
            self.heap = [(-count, self._lexicographic_key(pair), pair)
                         for pair, count in self.pair_counts.items()]
        heapify(self.heap)

    def _index_pairs(self, joined: str, words: list[str]) -> None:
        """Fill ``words_with`` and ``pair_counts`` from all words joined by ``sep``.

        One pass in C: every position of ``joined`` gives a pair (``map(add, ...)``) and
        the id of its word, and the id is appended to that pair's list; pairs with the
        separator are dropped afterwards. A word with a pair twice is listed twice, which
        makes the weighted count a plain sum, and ``word_ids`` drops the repeats later.

        ``["ab</w>", "b</w>"]`` with counts 2, 1 ->
        ``words_with == {("a", "b"): [0], ("b", "</w>"): [0, 1]}``, ``pair_counts == {("a", "b"): 2, ("b", "</w>"): 3}``
        """
        words_with: dict[str, list[int]] = defaultdict(list)
        # Word i owns len(word) + 1 positions: its own pairs, (last, sep), (sep, next first).
        word_of_position = chain.from_iterable(map(repeat, range(len(words)), map(add, map(len, words), repeat(1))))
        deque(map(list.append, map(words_with.__getitem__, map(add, joined, joined[1:])), word_of_position), maxlen=0)
        sep, weight = self.sep, self.weight.__getitem__
        for pair in [pair for pair in words_with if sep in pair]:
            del words_with[pair]
        self.words_with = dict(words_with)
        # Ids are sorted and weights go down with ids: only the few ids of words counted
        # more than twice are looked up; the words counted twice or once are counted by bisect.
        heavy_end, light_end = self.heavy_end, self.light_end
        pair_counts = self.pair_counts = {}
        for pair, ids in self.words_with.items():
            heavy = bisect_left(ids, heavy_end)
            light = bisect_left(ids, light_end, heavy)
            pair_counts[pair] = (sum(map(weight, ids[:heavy])) if heavy else 0) + 2 * (light - heavy) + len(ids) - light
        self.repeats = set(self.words_with)  # lists that may still name a word twice

    def _lexicographic_key(self, pair: str) -> tuple:
        """A heap key that puts the greatest ``(a, b)`` first: code points negated.

        ``("ab", "c")`` -> ``((-97, -98, 1), (-99, 1))``; the trailing 1 makes a longer
        string (greater) sort before its prefix.
        """
        symbol = self.alphabet.symbol
        return tuple(tuple([-ord(ch) for ch in symbol[code]] + [1]) for code in pair)

    def word_ids(self, pair: str) -> list[int]:
        """Sorted ids of the words that may contain ``pair``, each once."""
        ids = self.words_with[pair]
        if type(ids) is tuple:  # (spots, neighbour): picked out on first use
            spots, neighbour = ids
            ids = self.words_with[pair] = spots.word_ids(neighbour)
        elif pair in self.repeats:
            self.repeats.discard(pair)
            ids = self.words_with[pair] = [*dict.fromkeys(ids)]
        return ids

    def first_offset(self, pair: str) -> int:
        """Exact offset of the first occurrence of ``pair`` in corpus order (cached).

        Also drops the ids of words that no longer contain the pair.
        """
        offset = self.first_seen.get(pair)
        if offset is not None:
            return offset
        words = self.words
        ids = self.word_ids(pair)
        ids = self.words_with[pair] = [*compress(ids, map(contains, map(words.__getitem__, ids), repeat(pair)))]
        first = min(ids, key=self.word_start.__getitem__)
        word = words[first]
        length = self.alphabet.length
        offset = self.word_start[first] + sum(map(length.__getitem__, word[:word.find(pair)]))
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
        self.first_seen.pop(pair, None)
        ids = self.word_ids(pair)
        del words_with[pair]
        joined = sep.join(map(words.__getitem__, ids)).replace(pair, z)
        # Around spot i, parts[i] ends with its left neighbour and parts[i + 1] starts
        # with its right one; an empty part between two spots means "z z".
        parts = joined.split(z)
        if len(parts) == 1:  # cannot happen: a counted pair occurs somewhere
            raise AssertionError(f"pair {pair!r} counted but in no word")
        # The word of spot i is ids[number of separators before spot i].
        spot_ids = [*map(ids.__getitem__, accumulate(map(str.count, parts[:-1], repeat(sep))))]
        if not parts[0]:
            parts[0] = sep  # the first word starts with z: nothing on its left
        left = [*map(_LAST_CHARACTER, parts[:-1])]  # "" is z: "b a" -> "z z"
        right = [*map(_FIRST_CHARACTER, parts[1:])]  # "" is z (counted as a left) or the end
        del parts
        per_left = self._weighted_counts(left, spot_ids)
        per_right = self._weighted_counts(right, spot_ids)
        per_left.pop(sep, None)
        per_right.pop(sep, None)
        per_right.pop("", None)
        if existing is not None:
            joined = joined.replace(z, existing)
        deque(map(words.__setitem__, ids, joined.split(sep)), maxlen=0)
        # Left neighbour x: (x, a) is gone, (x, z) is new ("" is z: (b, a) -> (z, z)).
        # Right neighbour y: (b, y) is gone, (z, y) is new.
        first_seen = self.first_seen
        for x, n in per_left.items():
            gone = x + a if x else b + a
            counts[gone] -= n
            if first_seen:
                first_seen.pop(gone, None)
        for y, n in per_right.items():
            gone = b + y
            counts[gone] -= n
            if first_seen:
                first_seen.pop(gone, None)
        del counts[pair]  # "a a a": the overlapping "a a" went with it
        left_spots, right_spots = _Spots(spot_ids, left), _Spots(spot_ids, right)
        made = [(x + z if x else z + z, n, left_spots, x) for x, n in per_left.items()]
        made += [(z + y, n, right_spots, y) for y, n in per_right.items()]
        if existing is not None:
            self._made_again(made, z, existing)
            return
        heap = self.heap
        lexicographic_key = self._lexicographic_key if self.tie != "first" else None
        for key, n, spots, neighbour in made:
            counts[key] = n
            words_with[key] = (spots, neighbour)
            heappush(heap, (-n, lexicographic_key(key) if lexicographic_key else 0, key))

    def _weighted_counts(self, neighbours: list[str], spot_ids: list[int]) -> dict[str, int]:
        """Neighbour -> sum of the counts of the words of its spots.

        ``spot_ids`` is sorted, so the spots of count-2 and count-1 words are two
        stretches at the end, counted by ``Counter`` in C without weights; the few spots
        of frequent words are added up one by one.

        ``(["x", "y", "x"], [0, 7, 9])`` with counts 5, 2, 1 -> ``{"x": 6, "y": 2}``
        """
        heavy = bisect_left(spot_ids, self.heavy_end)
        light = bisect_left(spot_ids, self.light_end, heavy)
        per: dict[str, int] = Counter(neighbours[light:]) if light < len(spot_ids) else {}
        get = per.get
        if light > heavy:
            for key, n in Counter(neighbours[heavy:light]).items():
                per[key] = get(key, 0) + 2 * n
        if heavy:
            for key, weight in zip(neighbours, map(self.weight.__getitem__, spot_ids[:heavy])):
                per[key] = get(key, 0) + weight
        return per

    def _made_again(self, made: list[tuple], z: str, existing: str) -> None:
        """Book new pairs when the merged symbol already had a code (``existing``).

        Its pairs may exist already, and ``(existing, z)`` and ``(z, z)`` both become
        ``(existing, existing)``: counts add up, word ids are united, and a bound 0 goes
        in the heap because the pair may now occur earlier than before.
        """
        counts, words_with = self.pair_counts, self.words_with
        renamed: dict[str, tuple[int, set]] = {}
        for key, n, spots, neighbour in made:
            key = key.replace(z, existing)
            total, ids = renamed.get(key, (0, set()))
            renamed[key] = (total + n, ids | set(spots.word_ids(neighbour)))
        lexicographic = self.tie != "first"
        for key, (n, ids) in renamed.items():
            if key in words_with:
                ids |= set(self.word_ids(key))
            words_with[key] = sorted(ids)
            self.repeats.discard(key)
            self.first_seen.pop(key, None)
            count = counts[key] = counts.get(key, 0) + n
            heappush(self.heap, (-count, self._lexicographic_key(key) if lexicographic else 0, key))

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
                      verbose: bool = False, parallel_count: bool = False) -> list[Pair]:
    """Count the words of ``text``, then ``train_bpe``.

    ``parallel_count`` counts whitespace words on two cores (a forked process; avoid it in
    programs that run threads). ``("low low lower", 1) -> [("l", "o")]``
    """
    if mode == "char":
        word_counts = count_words_parallel(text) if parallel_count else count_words(text)
    else:
        word_counts = count_pretokens(text)
    return train_bpe(word_counts, num_merges, mode, tie, verbose)

"""The fast BPE trainer learns exactly the simple trainer's merges.

``simple_trainer`` is the definition (recount everything after each merge);
``fast_trainer`` updates counts incrementally and must agree merge for merge, in both
modes and with both tie rules. Worked examples are derived by hand in their docstrings;
random corpora over tiny alphabets force ties, overlapping pairs ("a a a") and a merged
symbol that already exists (the text "</w>" merged into the end-of-word symbol).
"""
from __future__ import annotations

import random
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_labs.reference import fast_trainer, pretokenize, simple_trainer
from benchmarks import bench_trainer, docstring_corpus

TRAINERS = [simple_trainer.train_bpe, fast_trainer.train_bpe]
TIES = ["first", "lexicographic"]


# --- worked examples -------------------------------------------------------------

LOW_LOWER = {"low": 5, "lower": 2, "newest": 6, "widest": 3}


@pytest.mark.parametrize("train", TRAINERS)
def test_low_lower_newest_widest_first(train):
    """Sennrich's corpus, tie rule "first".

    Symbols: ``l o w </w>`` x5, ``l o w e r </w>`` x2, ``n e w e s t </w>`` x6,
    ``w i d e s t </w>`` x3.

    1. (e,s), (s,t), (t,</w>) all occur 6 + 3 = 9 times; (e,s) is seen first (in
       "newest", left of the others) -> ``es``.
    2. (es,t) and (t,</w>) have 9; (es,t) comes first in "newest" -> ``est``.
    3. (est,</w>) 9 -> ``est</w>``.
    4. (l,o) and (o,w) have 5 + 2 = 7; (l,o) first -> ``lo``.  5. (lo,w) 7 -> ``low``.
    6. "newest" is ``n e w est</w>``: (n,e), (e,w), (w,est</w>) have 6; (n,e) first.
    7. (ne,w) 6.  8. (new,est</w>) 6.  9. (low,</w>) 5.
    10. Left: ``low e r </w>`` (2) and ``w i d est</w>`` (3): (w,i), (i,d), (d,est</w>)
        have 3 and (w,i) is seen first.
    """
    assert train(LOW_LOWER, 10) == [
        ("e", "s"), ("es", "t"), ("est", "</w>"), ("l", "o"), ("lo", "w"),
        ("n", "e"), ("ne", "w"), ("new", "est</w>"), ("low", "</w>"), ("w", "i"),
    ]


@pytest.mark.parametrize("train", TRAINERS)
def test_low_lower_newest_widest_lexicographic(train):
    """The same corpus with the CS336 rule: on equal counts the greatest (a, b) wins.

    1. Of (e,s), (s,t), (t,</w>) (9 each) the greatest is (t,</w>).
    2. (e,s) and (s,t</w>) have 9: (s,t</w>) > (e,s).  3. (e,st</w>) 9.
    4. (l,o) and (o,w) have 7: (o,w).  5. (l,ow) 7.
    6. (n,e), (e,w), (w,est</w>) have 6: "w" is the greatest first symbol.
    7. (n,e) and (e,west</w>) have 6: "n" > "e".  8. (ne,west</w>) 6.  9. (low,</w>) 5.
    10. (w,i), (i,d), (d,est</w>) have 3: (w,i).
    """
    assert train(LOW_LOWER, 10, tie="lexicographic") == [
        ("t", "</w>"), ("s", "t</w>"), ("e", "st</w>"), ("o", "w"), ("l", "ow"),
        ("w", "est</w>"), ("n", "e"), ("ne", "west</w>"), ("low", "</w>"), ("w", "i"),
    ]


@pytest.mark.parametrize("train", TRAINERS)
def test_first_occurrence_moves_when_a_merge_removes_it(train):
    """Byte mode (no end-of-word symbol), words ``abx`` x1, ``ab`` x5, ``yz`` x2, ``bx`` x2.

    1. (a,b) occurs 6 times -> ``ab``. This removes the (b,x) of "abx", the first word.
    2. (b,x) now occurs 2 times (in "bx" only) and so does (y,z). Before merge 1,
       (b,x) was seen first (in "abx"); now its first occurrence is in "bx", after "yz",
       so (y,z) wins. A trainer that kept the old first occurrence would pick (b,x).
    3. (b,x) 2.  4. (ab,x) 1.  Then every word is one symbol: training stops.
    """
    assert train({"abx": 1, "ab": 5, "yz": 2, "bx": 2}, 10, mode="byte") == [
        ("a", "b"), ("y", "z"), ("b", "x"), ("ab", "x"),
    ]


@pytest.mark.parametrize("train", TRAINERS)
@pytest.mark.parametrize("tie, third", [("first", ("Ġ", "hug")), ("lexicographic", ("p", "ug"))])
def test_byte_mode_gpt2_words(train, tie, third):
    """``"hug hug pug"`` pre-tokenizes as GPT-2 does: ``hug``, ``Ġhug``, ``Ġpug``.

    1. (u,g) occurs 3 times.  2. (h,ug) 2 times.
    3. (Ġ,hug), (Ġ,p), (p,ug) once each: (Ġ,hug) is seen first; the greatest pair of
       bytes is (p,ug): "Ġ" stands for the space, 0x20, below "p" (0x70).
    """
    word_counts = pretokenize.count_pretokens("hug hug pug")
    assert word_counts == {"hug": 1, "Ġhug": 1, "Ġpug": 1}
    assert train(word_counts, 3, mode="byte", tie=tie) == [("u", "g"), ("h", "ug"), third]


@pytest.mark.parametrize("train", TRAINERS)
def test_byte_ties_compare_the_space_as_a_byte(train):
    """``"za a za a"`` -> ``za``, ``Ġa`` x2, ``Ġza``; lexicographic ties compare bytes.

    1. (z,a) and (Ġ,a) occur 2 times each. As bytes (0x7A, ...) > (0x20, ...): (z,a).
       Comparing the printable characters would pick (Ġ,a): U+0120 > "z".
    2. (Ġ,a) 2.  3. (Ġ,za) 1. Then every word is one symbol.
    """
    word_counts = pretokenize.count_pretokens("za a za a")
    assert word_counts == {"za": 1, "Ġa": 2, "Ġza": 1}
    assert train(word_counts, 5, mode="byte", tie="lexicographic") == [
        ("z", "a"), ("Ġ", "a"), ("Ġ", "za"),
    ]


@pytest.mark.parametrize("train", TRAINERS)
def test_byte_ties_compare_non_ascii_bytes(train):
    """``"é €"`` is the bytes C3 A9 and 20 E2 82 AC, written ``Ã©`` and ``ĠâĤ¬``.

    0x82 is not printable: GPT-2 writes it ``Ĥ`` (U+0124), which as a character is above
    every other one here, so comparing characters would merge (Ĥ,¬) first. Every pair
    occurs once; comparing bytes:
    1. first bytes C3, 20, E2, 82: (â,Ĥ) (E2 82).  2. (âĤ,¬) (E2 82 > C3 and 20).
    3. (Ã,©) (C3 > 20).  4. (Ġ,âĤ¬).
    """
    word_counts = pretokenize.count_pretokens("é €")
    assert word_counts == {"Ã©": 1, "ĠâĤ¬": 1}
    merges = train(word_counts, 5, mode="byte", tie="lexicographic")
    assert merges == [("â", "Ĥ"), ("âĤ", "¬"), ("Ã", "©"), ("Ġ", "âĤ¬")]
    as_bytes = [(pretokenize.symbol_bytes(a), pretokenize.symbol_bytes(b)) for a, b in merges]
    assert as_bytes == [(b"\xe2", b"\x82"), (b"\xe2\x82", b"\xac"), (b"\xc3", b"\xa9"),
                        (b" ", "€".encode())]


@pytest.mark.parametrize("train", TRAINERS)
def test_byte_mode_refuses_other_characters(train):
    """Byte mode's symbols are GPT-2's 256 byte characters; "😀" must be written ``ðŁĺĢ``."""
    with pytest.raises(ValueError, match="byte characters"):
        train({"😀": 1}, 3, mode="byte")
    # F0 9F 98 80: the greatest pair of bytes is (F0, 9F), although "Ł" (9F, U+0141) is the greatest
    # character
    assert train(pretokenize.count_pretokens("😀"), 1, mode="byte", tie="lexicographic") == [
        ("ð", "Ł")
    ]


@pytest.mark.parametrize("train", TRAINERS)
def test_overlapping_pair_and_early_stop(train):
    """``a a a </w>``: (a,a) occurs twice (overlapping), (a,</w>) once -> ``aa``.

    Merging left to right gives ``aa a </w>``; (aa,a) and (a,</w>) occur once and (aa,a)
    comes first. Then (aaa,</w>), and one symbol is left: 3 merges although 10 were asked.
    """
    assert train({"aaa": 1}, 10) == [("a", "a"), ("aa", "a"), ("aaa", "</w>")]


@pytest.mark.parametrize("train", TRAINERS)
def test_no_pair_left(train):
    """One-character words have no pair in byte mode; in char mode only (x, </w>)."""
    assert train({"a": 5, "b": 1}, 4, mode="byte") == []
    assert train({"a": 5, "b": 1}, 4) == [("a", "</w>"), ("b", "</w>")]
    assert train({}, 4) == []


@pytest.mark.parametrize("train", TRAINERS)
def test_zero_merges(train):
    assert train(LOW_LOWER, 0) == []


@pytest.mark.parametrize("train", TRAINERS)
def test_text_end_of_word_made_from_characters(train):
    """Symbols are strings: the text "</w>", once merged, *is* the end-of-word symbol.

    ``</w>`` x3 and ``x</w>`` x1 are ``< / w > </w>`` and ``x < / w > </w>``.
    1-3. (<,/), (/,w), (w,>) occur 4 times and come first in that order: ``</``,
         ``</w``, then ``</w>``, now the same symbol as the end-of-word mark.
    4. Each word ends ``</w> </w>``: that pair occurs 4 times.
    5. (x,</w></w>) 1.
    """
    assert train({"</w>": 3, "x</w>": 1}, 10) == [
        ("<", "/"), ("</", "w"), ("</w", ">"), ("</w>", "</w>"), ("x", "</w></w>"),
    ]


@pytest.mark.parametrize("train", TRAINERS)
def test_pair_made_again_can_come_first(train):
    """``</w>bb`` is ``< / w > b b </w>``: every pair occurs once, so first occurrence decides.

    1-3. (<,/), (</,w), (</w,>): the text becomes the end-of-word symbol, and the word
         ``</w> b b </w>``.
    4. (</w>,b), (b,b), (b,</w>) occur once; (</w>,b) is at the very start of the corpus,
       although it is a pair that did not exist before: it wins.
    5. (</w>b,b).  6. (</w>bb,</w>).
    """
    assert train({"</w>bb": 1}, 10) == [
        ("<", "/"), ("</", "w"), ("</w", ">"), ("</w>", "b"), ("</w>b", "b"), ("</w>bb", "</w>"),
    ]


@pytest.mark.parametrize("train", TRAINERS)
def test_bad_arguments(train):
    with pytest.raises(ValueError):
        train(LOW_LOWER, 3, tie="random")
    with pytest.raises(ValueError):
        train(LOW_LOWER, 3, mode="word")
    with pytest.raises(ValueError):
        train({"a": 0}, 3)
    with pytest.raises(ValueError):
        train(LOW_LOWER, -1)


def test_verbose_prints_one_line_per_merge(capsys):
    merges = fast_trainer.train_bpe({"low": 2, "lower": 1}, 3, verbose=True)
    assert merges == [("l", "o"), ("lo", "w"), ("low", "</w>")]
    assert capsys.readouterr().out.splitlines() == [
        "merge 1/3: ('l', 'o') -> 'lo' (count 3)",
        "merge 2/3: ('lo', 'w') -> 'low' (count 3)",
        "merge 3/3: ('low', '</w>') -> 'low</w>' (count 2)",
    ]


def test_train_on_text_counts_words_first():
    """``low low lower``: (l,o) and (o,w) occur 3 times, (l,o) first."""
    assert fast_trainer.train_bpe_on_text("low low lower", 2) == [("l", "o"), ("lo", "w")]
    assert fast_trainer.train_bpe_on_text("hug pug", 1, mode="byte") == [("u", "g")]


EOT = "<|endoftext|>"


@pytest.mark.parametrize("mode", ["char", "byte"])
def test_special_tokens_are_never_merged_across(mode):
    """``ab<|endoftext|>ab<|endoftext|>``: only ``ab`` twice is left once the special tokens cut the
    text.

    Without ``special_tokens`` the pre-tokens ``<|``, ``endoftext``, ``|>`` (byte mode) or the
    word ``ab<|endoftext|>ab<|endoftext|>`` (char mode) would be merged too.
    """
    text = f"ab{EOT}ab{EOT}"
    end = [("ab", "</w>")] if mode == "char" else []
    assert (
        fast_trainer.train_bpe_on_text(text, 10, mode, special_tokens=[EOT]) == [("a", "b")] + end
    )
    merged = "".join(a + b for a, b in fast_trainer.train_bpe_on_text(text, 10, mode))
    assert "<" in merged and "|" in merged
    # "b<|endoftext|>c": nothing spans the special token, so in byte mode no pair is left at all
    assert fast_trainer.train_bpe_on_text(f"b{EOT}c", 5, "byte", special_tokens=[EOT]) == []


def test_longer_special_token_wins():
    assert pretokenize.split_on_special_tokens("a<|x|><|x|>b<|x|>c", ["<|x|>", "<|x|><|x|>"]) == [
        "a", "b", "c",
    ]
    assert pretokenize.split_on_special_tokens("a.b", []) == ["a.b"]


# Text we wrote for the CS336-style run: spaces, new lines, punctuation, digits and
# non-ASCII letters, documents separated by <|endoftext|>.
STORIES = [
    "Once upon a time, a small robot named Zoë lived in a café by the sea.",
    "Every morning she counted 12 boats, then 13, then 14: boats, boats, boats!",
    "The baker's daughter said: \"Zoë, you're the best counter in town.\"\n\nZoë smiled.",
    "Naïve fish swam past the pier; the robot waved at them — twice — and hummed.",
    "At night the café closed, and the sea sang its slow song to the sleeping town.",
]
CS336_TEXT = EOT.join(STORIES * 3)

# GPT-2's pre-tokenization pattern, as CS336 writes it for the `regex` module.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def train_from_bytes(
    text: str, num_merges: int, special_tokens: list[str]
) -> list[tuple[bytes, bytes]]:
    """CS336's definition written on bytes, from scratch: no printable characters anywhere.

    Cut at special tokens, pre-tokenize with the GPT-2 pattern, count each pre-token's
    UTF-8 bytes, then repeatedly merge the pair with the highest count, ties to the
    greater pair of bytes (``max`` over ``(count, pair)``).
    """
    from tokenizers import Regex, pre_tokenizers

    splitter = pre_tokenizers.Split(Regex(GPT2_PATTERN), behavior="isolated")
    counts = {}
    for piece in pretokenize.split_on_special_tokens(text, special_tokens):
        for pretoken, _ in splitter.pre_tokenize_str(piece):
            word = tuple(bytes([byte]) for byte in pretoken.encode("utf-8"))
            counts[word] = counts.get(word, 0) + 1
    words = list(counts.items())
    merges = []
    for _ in range(num_merges):
        pairs = {}
        for symbols, count in words:
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] = pairs.get(pair, 0) + count
        if not pairs:
            break
        best = max(pairs.items(), key=lambda item: (item[1], item[0]))[0]
        merges.append(best)
        words = [(tuple(simple_trainer.merge_symbols(list(symbols), best)), count)
                 for symbols, count in words]
    return merges


def test_cs336_style_run_matches_the_definition_on_bytes():
    """vocab 400 with one special token: 400 - 256 - 1 = 143
    merges, each as the bytes definition learns them."""
    vocab, merges = fast_trainer.train_byte_level_bpe(CS336_TEXT, 400, [EOT])
    assert len(merges) == 143
    assert merges == train_from_bytes(CS336_TEXT, 143, [EOT])
    assert len(vocab) == 400 and sorted(vocab) == list(range(400))
    assert [vocab[byte] for byte in range(256)] == [bytes([byte]) for byte in range(256)]
    assert vocab[256] == EOT.encode()
    assert [vocab[257 + rank] for rank in range(143)] == [a + b for a, b in merges]
    # the text has neither outside EOT
    assert not any(b"<" in a + b or b"|" in a + b for a, b in merges)
    assert (b"\xc3", b"\xab") in merges  # the "ë" of Zoë, two bytes, made one token


def test_cs336_style_run_stops_when_the_text_runs_out_and_checks_the_size():
    vocab, merges = fast_trainer.train_byte_level_bpe(f"aa{EOT}aa", 1000, [EOT])
    assert merges == [(b"a", b"a")] and len(vocab) == 256 + 1 + 1
    with pytest.raises(ValueError, match="256"):
        fast_trainer.train_byte_level_bpe("ab", 256, [EOT])


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="ab z\n\t'1é€ł😀", max_size=60), st.integers(0, 25))
def test_byte_lexicographic_rule_is_the_bytes_definition(text, num_merges):
    """On random texts with spaces, new lines and non-ASCII letters, the byte-level
    lexicographic rule learns what the definition on bytes learns, in both trainers."""
    expected = train_from_bytes(text, num_merges, [])
    counts = pretokenize.count_pretokens(text)
    for train in TRAINERS:
        merges = train(counts, num_merges, "byte", "lexicographic")
        assert [
            (pretokenize.symbol_bytes(a), pretokenize.symbol_bytes(b)) for a, b in merges
        ] == expected


# --- word counting -------------------------------------------------------------------

def test_count_words_keeps_first_occurrence_order():
    assert list(pretokenize.count_words("b a\tb\n c a b").items()) == [("b", 3), ("a", 2), ("c", 1)]


def test_count_words_parallel_is_the_same_dict(monkeypatch):
    rng = random.Random(7)
    text = " ".join(rng.choice(["the", "cat", "sat", "on", "a", "mat", "x" * rng.randint(1, 9)])
                    for _ in range(5000))
    monkeypatch.setattr(pretokenize, "PARALLEL_MIN_CHARS", 100)  # take the two-process path
    assert list(pretokenize.count_words_parallel(text).items()) == list(
        pretokenize.count_words(text).items()
    )


# --- fast == simple on random corpora --------------------------------------------------

ALPHABETS = ["ab", "abc", "aab", "abcd", "</w>a", "xy😀"]
# Byte mode takes GPT-2's byte characters. These sort differently as characters and as
# the bytes they stand for: Ġ (space, 0x20) < a < z < Ĥ (0x82) < © (0xA9) < Ã (0xC3) as
# bytes, but a < z < © < Ã < Ġ (U+0120) < Ĥ (U+0124) as characters.
BYTE_ALPHABETS = ["ab", "aab", "Ġa", "ĠaĠz", "ĠzĤ©Ã", "aĤ©", "ĠĠa©"]


# Words made of whole "</w>" pieces make the end-of-word symbol again (char mode).
TOKEN_WORDS = st.lists(st.sampled_from(["</w>", "a", "b", "<"]), min_size=1, max_size=5).map(
    "".join
)


@st.composite
def word_counts(draw, mode="char"):
    alphabet = draw(st.sampled_from(ALPHABETS if mode == "char" else BYTE_ALPHABETS))
    word = draw(st.sampled_from([st.text(alphabet=alphabet, min_size=1, max_size=9), TOKEN_WORDS]))
    words = draw(st.lists(word, min_size=1, max_size=12, unique=True))
    counts = draw(st.lists(st.one_of(st.integers(1, 3), st.integers(1, 60)), min_size=len(words),
                           max_size=len(words)))
    return dict(zip(words, counts))


@settings(max_examples=400, deadline=None)
@given(st.data(), st.integers(0, 40), st.sampled_from(["char", "byte"]), st.sampled_from(TIES))
def test_fast_equals_simple_on_word_counts(data, num_merges, mode, tie):
    counts = data.draw(word_counts(mode))
    expected = simple_trainer.train_bpe(counts, num_merges, mode, tie)
    assert fast_trainer.train_bpe(counts, num_merges, mode, tie) == expected


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab c\né€", max_size=80), st.integers(0, 30), st.sampled_from(TIES))
def test_fast_equals_simple_on_texts(text, num_merges, tie):
    for word_counts_of, mode in [(pretokenize.count_words, "char"),
                                 (pretokenize.count_pretokens, "byte")]:
        counts = word_counts_of(text)
        expected = simple_trainer.train_bpe(counts, num_merges, mode, tie)
        assert fast_trainer.train_bpe(counts, num_merges, mode, tie) == expected


@pytest.mark.parametrize("mode", ["char", "byte"])
@pytest.mark.parametrize("tie", TIES)
def test_fast_equals_simple_on_a_zipf_corpus(mode, tie):
    """A few hundred words with Zipf-like counts, trained until every word is one symbol."""
    rng = random.Random(2024)
    syllables = ["th", "e", "an", "re", "in", "s", "on", "er", "a", "t", "ing", "ed"]
    words = {"".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(400)}
    counts = {word: max(1, int(300 / (rank + 1) ** 1.1)) for rank, word in enumerate(sorted(words))}
    expected = simple_trainer.train_bpe(counts, 2000, mode, tie)
    assert fast_trainer.train_bpe(counts, 2000, mode, tie) == expected
    assert len(expected) < 2000  # it did stop early



@settings(max_examples=60, deadline=None)
@given(word_counts(), st.integers(0, 30), st.sampled_from(TIES),
       st.sampled_from([2 ** 50, 2 ** 58, 2 ** 70]))
def test_fast_equals_simple_with_huge_counts(counts, num_merges, tie, scale):
    """Counts past float64's exact range (2**53) take the int64 path, past 2**63 Python ints."""
    counts = {word: count * scale + count for word, count in counts.items()}
    expected = simple_trainer.train_bpe(counts, num_merges, "char", tie)
    assert fast_trainer.train_bpe(counts, num_merges, "char", tie) == expected


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(0, 30), st.sampled_from(["char", "byte"]), st.sampled_from(TIES))
def test_fast_equals_simple_when_the_packed_sort_would_overflow(data, num_merges, mode, tie):
    """The initial index falls back to a stable argsort
    when (pair, position) would not fit an int64."""
    counts = data.draw(word_counts(mode))
    original = fast_trainer.PACKED_SORT_BELOW
    fast_trainer.PACKED_SORT_BELOW = 0  # hypothesis and monkeypatch do not mix: restore by hand
    try:
        assert fast_trainer.train_bpe(counts, num_merges, mode, tie) == \
            simple_trainer.train_bpe(counts, num_merges, mode, tie)
    finally:
        fast_trainer.PACKED_SORT_BELOW = original


def test_more_merges_asked_than_possible():
    """A billion merges asked: ids stay small (at most one merge per symbol), training stops."""
    assert fast_trainer.train_bpe({"abab": 3, "ba": 1}, 10 ** 9) == \
        simple_trainer.train_bpe({"abab": 3, "ba": 1}, 50)


# --- fast trainer's building blocks (the worked examples in their docstrings) ----------

def test_corpus_layout_and_initial_index():
    """``ab`` x2, ``b`` x1 in char mode: a=0, b=1, </w>=2, separators -1 (width 3 + 2 merges)."""
    trainer = fast_trainer._Trainer({"ab": 2, "b": 1}, "char", "first", 2)
    assert trainer.symbols.tolist() == [0, 1, 2, -1, 1, 2, -1]
    assert trainer.weight.tolist() == [2, 2, 2, 2, 1, 1, 1]
    width = trainer.width
    assert trainer.pair_counts == {0 * width + 1: 2, 1 * width + 2: 3}
    assert trainer.live_places(1 * width + 2).tolist() == [1, 4]
    assert trainer.merged_pair(trainer.best_pair()) == ("b", "</w>")


def test_every_other_place_in_a_run_of_the_same_symbol():
    """Places of (a, a) at 0, 1, 2, 3 (``a a a a a``) and 7: left to right takes 0, 2 and 7."""
    next_pos = np.arange(1, 11)
    assert fast_trainer._every_other_in_runs(np.array([0, 1, 2, 3, 7]), next_pos).tolist() == [
        0, 2, 7,
    ]
    assert fast_trainer._every_other_in_runs(np.array([0, 2, 4]), next_pos).tolist() == [0, 2, 4]


def test_places_picked_out_by_neighbour():
    places = fast_trainer._Places(np.array([3, 8, 9]), np.array([7, 5, 7]))
    assert places.of(7).tolist() == [3, 9]
    assert places.of(4).tolist() == []

# --- benchmark helpers --------------------------------------------------------------

def test_whitespace_pieces_never_cut_a_word():
    text = "alpha beta\tgamma delta  epsilon"
    pieces = bench_trainer.whitespace_pieces(text, 4)
    assert "".join(pieces) == text
    assert [word for piece in pieces for word in piece.split()] == text.split()


def test_initial_tokenizers_vocab_size():
    """``{"ab", "b"}``: characters a, b and word-final b</w>."""
    assert bench_trainer.initial_tokenizers_vocab_size({"ab": 1, "b": 2}) == 3


def test_docstrings_in_source_order(tmp_path):
    source = textwrap.dedent('''
        """Module doc."""
        def f():
            """Function doc."""
        class C:
            """Class doc."""
            def m(self):
                """Method doc."""
        def g():
            """Function doc."""
    ''')
    (tmp_path / "b.py").write_text(source)
    (tmp_path / "a.py").write_text('"""First file."""\n')
    (tmp_path / "broken.py").write_text("def (:\n")
    docs = list(docstring_corpus.iter_docstrings([tmp_path]))
    assert docs == ["First file.", "Module doc.", "Function doc.", "Class doc.", "Method doc."]
    text = docstring_corpus.build_text(20, [tmp_path])
    assert text == "First file.\n\nModule "  # 20 bytes
    with pytest.raises(RuntimeError):
        docstring_corpus.build_text(10_000, [tmp_path])

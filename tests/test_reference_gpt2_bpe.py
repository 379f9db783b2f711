"""The gpt2_bpe reference reproduces the Hugging Face course and agrees with `tokenizers`.

Source of the published results below: Hugging Face LLM course, chapter 6, section 5,
"Byte-Pair Encoding tokenization" (https://huggingface.co/learn/llm-course/chapter6/5,
file chapters/en/chapter6/5.mdx of github.com/huggingface/course). The course trains on
four sentences with vocab_size=50 and prints its word frequencies, the first six pair
counts, the 19 merges, the vocabulary and the tokens of "This is not a token.".
Note: the course's code cell spells "course." in lower case, but its printed outputs
(a token "ĠCourse" and a "C" in the alphabet) come from "Course.": we use the latter.
"""
from __future__ import annotations

import doctest

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers

from bpe_labs.reference import byte_level_bpe as ref

COURSE_CORPUS = [
    "This is the Hugging Face Course.",
    "This chapter is about tokenization.",
    "This section shows several tokenizer algorithms.",
    "Hopefully, you will be able to understand how they are trained and generate tokens.",
]

# Published outputs of the course (see the module docstring).
PUBLISHED_WORD_FREQS = {
    "This": 3, "Ġis": 2, "Ġthe": 1, "ĠHugging": 1, "ĠFace": 1, "ĠCourse": 1, ".": 4,
    "Ġchapter": 1, "Ġabout": 1, "Ġtokenization": 1, "Ġsection": 1, "Ġshows": 1,
    "Ġseveral": 1, "Ġtokenizer": 1, "Ġalgorithms": 1, "Hopefully": 1, ",": 1, "Ġyou": 1,
    "Ġwill": 1, "Ġbe": 1, "Ġable": 1, "Ġto": 1, "Ġunderstand": 1, "Ġhow": 1, "Ġthey": 1,
    "Ġare": 1, "Ġtrained": 1, "Ġand": 1, "Ġgenerate": 1, "Ġtokens": 1,
}
PUBLISHED_ALPHABET = list(",.CFHTabcdefghiklmnoprstuvwyz") + ["Ġ"]
PUBLISHED_FIRST_PAIR_FREQS = [
    (("T", "h"), 3), (("h", "i"), 3), (("i", "s"), 5),
    (("Ġ", "i"), 2), (("Ġ", "t"), 7), (("t", "h"), 3),
]
PUBLISHED_MERGES = [
    ("Ġ", "t"), ("i", "s"), ("e", "r"), ("Ġ", "a"), ("Ġt", "o"), ("e", "n"), ("T", "h"),
    ("Th", "is"), ("o", "u"), ("s", "e"), ("Ġto", "k"), ("Ġtok", "en"), ("n", "d"),
    ("Ġ", "is"), ("Ġt", "h"), ("Ġth", "e"), ("i", "n"), ("Ġa", "b"), ("Ġtoken", "i"),
]
PUBLISHED_TOKENS = ["This", "Ġis", "Ġ", "n", "o", "t", "Ġa", "Ġtoken", "."]


def test_doctests_of_the_reference_pass():
    result = doctest.testmod(ref)
    assert result.attempted > 0 and result.failed == 0


def test_word_freqs_alphabet_and_first_pair_counts_match_the_course():
    word_freqs = ref.compute_word_freqs(COURSE_CORPUS)
    assert list(word_freqs.items()) == list(PUBLISHED_WORD_FREQS.items())
    assert ref.build_alphabet(word_freqs) == PUBLISHED_ALPHABET
    pair_freqs = ref.compute_pair_freqs(ref.initial_splits(word_freqs), word_freqs)
    assert list(pair_freqs.items())[:6] == PUBLISHED_FIRST_PAIR_FREQS


def test_training_matches_the_course_merges_and_vocab():
    merges, vocab = ref.train_bpe(COURSE_CORPUS, vocab_size=50)
    assert list(merges.items()) == [(pair, pair[0] + pair[1]) for pair in PUBLISHED_MERGES]
    assert vocab == ["<|endoftext|>"] + PUBLISHED_ALPHABET + [a + b for a, b in PUBLISHED_MERGES]


def test_tokenize_matches_the_course():
    merges, _vocab = ref.train_bpe(COURSE_CORPUS, vocab_size=50)
    assert ref.tokenize("This is not a token.", merges) == PUBLISHED_TOKENS


def test_ties_go_to_the_pair_counted_first():
    # ("b", "a") and ("a", "b") both occur once; "ba" is counted first.
    merges, vocab = ref.train_bpe(["ba", "ab"], vocab_size=4)
    assert merges == {("b", "a"): "ba"}
    assert vocab == ["<|endoftext|>", "a", "b", "ba"]


def test_small_vocab_size_keeps_the_whole_alphabet_and_learns_nothing():
    merges, vocab = ref.train_bpe(["abc"], vocab_size=2)
    assert merges == {}
    assert vocab == ["<|endoftext|>", "a", "b", "c"]


def test_training_stops_when_no_pair_is_left():
    merges, vocab = ref.train_bpe(["a b"], vocab_size=50)
    assert list(merges) == [("Ġ", "b")]
    assert vocab == ["<|endoftext|>", "a", "b", "Ġ", "Ġb"]


def test_merge_is_left_to_right_and_never_overlaps():
    splits = {"aaa": ["a", "a", "a"], "x": ["x"]}
    assert ref.merge_pair("a", "a", splits, {"aaa": 1, "x": 5}) == {"aaa": ["aa", "a"], "x": ["x"]}
    assert splits["aaa"] == ["a", "a", "a"], "merge_pair must not change its input"


def library_tokenizer(merges: dict, vocab: list[str]) -> Tokenizer:
    """`tokenizers`' BPE model with these merges, on
    all 256 byte symbols, GPT-2 pre-tokenization."""
    token_ids: dict[str, int] = {}
    for token in pre_tokenizers.ByteLevel.alphabet() + vocab:
        token_ids.setdefault(token, len(token_ids))
    tokenizer = Tokenizer(models.BPE(vocab=token_ids, merges=list(merges)))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return tokenizer


COURSE_MERGES, COURSE_VOCAB = ref.train_bpe(COURSE_CORPUS, vocab_size=50)
COURSE_TOKENIZER = library_tokenizer(COURSE_MERGES, COURSE_VOCAB)
# Mostly the corpus's own characters (so merges fire), plus spaces, newlines and a few others.
TEXT_CHARACTERS = "".join(sorted(set("".join(COURSE_CORPUS)))) + "   \n'é1!"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=TEXT_CHARACTERS, max_size=60))
def test_tokenize_equals_the_tokenizers_bpe_model_on_random_text(text):
    assert ref.tokenize(text, COURSE_MERGES) == COURSE_TOKENIZER.encode(text).tokens


SMALL_WORDS = st.text(alphabet="abc", min_size=1, max_size=6)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(SMALL_WORDS, min_size=1, max_size=6).map(" ".join), min_size=1, max_size=4),
    st.integers(min_value=2, max_value=30),
    st.text(alphabet="abc .", max_size=30),
)
def test_tokenize_equals_the_tokenizers_bpe_model_with_merges_learned_on_random_corpora(
    corpus, vocab_size, text
):
    merges, vocab = ref.train_bpe(corpus, vocab_size)
    assert ref.tokenize(text, merges) == library_tokenizer(merges, vocab).encode(text).tokens

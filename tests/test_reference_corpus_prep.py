"""Tests of the corpus preparation lab's reference and of the lab's own documents.

The hidden tests of ``solutions/corpus_prep.ipynb`` trust ``word_freq_bpe``; these tests
check it against hand-worked examples and against properties that hold for any input
(merging keeps the spelling of every word, counts add up, frozen suffixes stay whole).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_labs.reference import word_freq_bpe as ref

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ROOT / "data" / "documents"
SENNRICH = {"low": 5, "lower": 2, "newest": 6, "widest": 3}

words = st.text(alphabet="abcdé", min_size=1, max_size=7)
word_freqs = st.dictionaries(words, st.integers(min_value=1, max_value=9), max_size=10)
FAST = settings(max_examples=60, deadline=None)


def spelled(vocab_key: str) -> str:
    """The word a vocabulary key spells: ``"l o w </w>" -> "low"``."""
    return vocab_key.replace(" ", "").removesuffix(ref.END_OF_WORD)


# --- the documents ------------------------------------------------------------------------


def document_paths() -> list[Path]:
    return sorted(DOCUMENTS.glob("*.md"))


def test_there_are_eight_to_twelve_documents():
    assert 8 <= len(document_paths()) <= 12


@pytest.mark.parametrize("path", document_paths(), ids=lambda p: p.name)
def test_every_document_has_the_five_front_matter_fields(path):
    metadata, body, tokens = ref.process_document(path.read_text(encoding="utf-8"))
    assert set(metadata) == set(ref.FRONT_MATTER_FIELDS)
    assert all(type(metadata[field]) is str and metadata[field]
               for field in ("title", "author", "publisher", "summary"))
    assert (
        type(metadata["tags"]) is list
        and metadata["tags"]
        and all(type(tag) is str for tag in metadata["tags"])
    )
    assert not body.startswith("---") and len(tokens) >= 100


def test_the_notebook_lists_exactly_the_documents_of_the_folder():
    """Colab downloads the documents by the names listed
    in the notebook: they must match the folder."""
    notebook = json.loads((ROOT / "solutions" / "corpus_prep.ipynb").read_text(encoding="utf-8"))
    source = next("".join(c["source"]) for c in notebook["cells"] if c.get("id") == "documents")
    listed = json.loads(re.search(r"DOCUMENT_FILES = (\[.*?\])", source).group(1).replace("'", '"'))
    assert listed == [p.name for p in document_paths()]


# --- process_document and build_corpus -----------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("---\ntags: [a, b]\n---\nHello, World",
         ({"tags": ["a", "b"]}, "Hello, World", ["hello", "world"])),
        ("---\ntags:\n  - a\n  - b\n---\n", ({"tags": ["a", "b"]}, "", [])),
        ("---\ntitle: T\n---", ({"title": "T"}, "", [])),
        ("---\n---\n body ", ({}, "body", ["body"])),
        ("  No front matter\n", ({}, "No front matter", ["no", "front", "matter"])),
        ("---\ntitle: unclosed\nbody",
         ({}, "---\ntitle: unclosed\nbody", ["title", "unclosed", "body"])),
        ("x\n---\ntitle: T\n---\ny", ({}, "x\n---\ntitle: T\n---\ny", ["x", "title", "t", "y"])),
        ("---\ntitle: T\n---\na\n---\nb", ({"title": "T"}, "a\n---\nb", ["a", "b"])),
        ("Café NAÏVE don't", ({}, "Café NAÏVE don't", ["café", "naïve", "don", "t"])),
        ("", ({}, "", [])),
    ],
)
def test_process_document_examples(text, expected):
    assert ref.process_document(text) == expected


def test_build_corpus_counts_bodies_in_order_of_first_appearance():
    documents = ["---\ntitle: Skip\n---\nb a b", "A c", "---\ntitle: Empty\n---\n"]
    assert list(ref.build_corpus(documents).items()) == [("b", 2), ("a", 2), ("c", 1)]
    assert type(ref.build_corpus(documents)) is dict and ref.build_corpus([]) == {}


@FAST
@given(st.lists(st.lists(st.sampled_from(["the", "The", "tide", "café", "x_1", "7"]), max_size=8),
                max_size=4))
def test_build_corpus_total_is_the_number_of_body_tokens(bodies):
    documents = ["---\ntitle: ignored words\n---\n" + " ".join(body) for body in bodies]
    corpus = ref.build_corpus(documents)
    assert sum(corpus.values()) == sum(len(body) for body in bodies)
    assert "ignored" not in corpus


# --- get_stats and merge_vocab -------------------------------------------------------------


def test_get_stats_on_the_toy_vocabulary_of_the_paper():
    stats = ref.get_stats(ref.initial_vocab(SENNRICH))
    assert stats[("e", "s")] == 9 and stats[("l", "o")] == 7 and stats[("w", "e")] == 8
    assert list(stats)[:3] == [("l", "o"), ("o", "w"), ("w", "</w>")]


def test_get_stats_counts_repeated_pairs_and_ignores_single_symbols():
    assert ref.get_stats({"a a a a </w>": 3, "</w>": 7}) == {("a", "a"): 9, ("a", "</w>"): 3}


@pytest.mark.parametrize(
    "pair, vocab, expected",
    [
        (("e", "s"), {"n e w e s t </w>": 6, "e st </w>": 2, "ne s </w>": 1},
         {"n e w es t </w>": 6, "e st </w>": 2, "ne s </w>": 1}),
        (("s", "</w>"), {"b u s </w>": 2, "s </w>s </w>": 1}, {"b u s</w>": 2, "s </w>s </w>": 1}),
        (("a", "."), {"a . b </w>": 2, "a x b </w>": 1}, {"a. b </w>": 2, "a x b </w>": 1}),
        (("+", "+"), {"+ + + </w>": 1}, {"++ + </w>": 1}),
        (("(", "a"), {"( a ) </w>": 1}, {"(a ) </w>": 1}),
        (("\\", "1"), {"x \\ 1 </w>": 3}, {"x \\1 </w>": 3}),
        (("\\", "d"), {"\\ d </w>": 1, "a d </w>": 1}, {"\\d </w>": 1, "a d </w>": 1}),
        (("a", "a"), {"a a a </w>": 1, "a a a a </w>": 2}, {"aa a </w>": 1, "aa aa </w>": 2}),
    ],
)
def test_merge_vocab_edge_cases(pair, vocab, expected):
    merged = ref.merge_vocab(pair, vocab)
    assert merged == expected and list(merged) == list(expected)


@FAST
@given(word_freqs, st.integers(min_value=0, max_value=6), st.data())
def test_merge_vocab_keeps_words_and_counts(freqs, warmup, data):
    vocab = ref.learn_bpe(freqs, warmup)[1]
    stats = ref.get_stats(vocab)
    if not stats:
        return
    pair = data.draw(st.sampled_from(sorted(stats)))
    merged = ref.merge_vocab(pair, vocab)
    assert [spelled(k) for k in merged] == [spelled(k) for k in vocab]
    assert list(merged.values()) == list(vocab.values())
    # every occurrence is gone, and the number of symbols drops by the (weighted) pair count or less
    assert pair not in ref.get_stats(merged)
    assert (
        sum(len(k.split()) * c for k, c in vocab.items())
        - sum(len(k.split()) * c for k, c in merged.items())
        <= stats[pair]
    )


# --- learn_bpe -----------------------------------------------------------------------------


def test_learn_bpe_on_the_toy_vocabulary_of_the_paper():
    merges, vocab = ref.learn_bpe(SENNRICH, 10)
    assert merges[:4] == [("e", "s"), ("es", "t"), ("est", "</w>"), ("l", "o")]
    assert vocab == {"low</w>": 5, "low e r </w>": 2, "newest</w>": 6, "wi d est</w>": 3}


@pytest.mark.parametrize(
    "freqs, num_merges, expected",
    [
        ({}, 5, []),
        ({"ab": 1}, 10, [("a", "b"), ("ab", "</w>")]),
        ({"ab": 1, "cd": 3}, 1, [("c", "d")]),
        ({"ab": 2, "cd": 2}, 1, [("a", "b")]),
        ({"cd": 2, "ab": 2}, 1, [("c", "d")]),
        ({"ab": 2, "cd": 2}, 0, []),
    ],
)
def test_learn_bpe_weights_ties_and_stops(freqs, num_merges, expected):
    assert ref.learn_bpe(freqs, num_merges)[0] == expected


def test_weighting_changes_the_merges_on_the_documents():
    corpus = ref.build_corpus([p.read_text(encoding="utf-8") for p in document_paths()])
    weighted = ref.learn_bpe(corpus, 15)[0]
    unweighted = ref.learn_bpe(dict.fromkeys(corpus, 1), 15)[0]
    assert ("t", "h") in weighted and ("t", "h") not in unweighted


@FAST
@given(word_freqs, st.integers(min_value=0, max_value=30))
def test_learn_bpe_properties(freqs, num_merges):
    merges, vocab = ref.learn_bpe(freqs, num_merges)
    assert len(merges) <= num_merges and len(set(merges)) == len(merges)
    assert {spelled(k): c for k, c in vocab.items()} == freqs
    if len(merges) < num_merges:  # stopped early: nothing left to merge
        assert all(len(k.split()) == 1 for k in vocab)
    # tokenizing a training word with the merges gives its symbols in the final vocab
    for key in vocab:
        assert ref.tokenize(spelled(key), merges) == key.split()


# --- the protected lexicon -----------------------------------------------------------------


def test_split_suffix():
    morphemes = ["s", "ness", "ing", "ed"]
    assert ref.split_suffix("kindness", morphemes) == ("kind", "ness")
    assert ref.split_suffix("walking", morphemes) == ("walk", "ing")
    assert ref.split_suffix("sing", morphemes) == ("sing", "")
    assert ref.split_suffix("red", morphemes) == ("red", "")
    assert ref.split_suffix("walks", []) == ("walks", "")


def test_learn_bpe_protected_example():
    merges, vocab = ref.learn_bpe_protected({"walking": 3, "talking": 2, "walked": 2, "sing": 1}, 4,
                                            ["ing", "ed"])
    assert merges == [("a", "l"), ("al", "k"), ("w", "alk"), ("t", "alk")]
    assert vocab == {"walk ing</w>": 3, "talk ing</w>": 2, "walk ed</w>": 2, "s i n g </w>": 1}


@FAST
@given(
    st.dictionaries(
        st.tuples(
            st.text(alphabet="abcd", min_size=1, max_size=5), st.sampled_from(["", "ing", "ed"])
        ).map("".join), st.integers(min_value=1, max_value=9), max_size=8,
    ), st.integers(min_value=0, max_value=25),
)
def test_learn_bpe_protected_never_touches_a_frozen_symbol(freqs, num_merges):
    morphemes = ["ing", "ed"]
    frozen = {"ing</w>", "ed</w>"}
    merges, vocab = ref.learn_bpe_protected(freqs, num_merges, morphemes)
    assert not any(left in frozen or right in frozen for left, right in merges)
    assert {spelled(k): c for k, c in vocab.items()} == freqs
    for key in vocab:
        stem, suffix = ref.split_suffix(spelled(key), morphemes)
        if suffix:
            assert key.split()[-1] == suffix + "</w>"
        assert ref.tokenize_protected(spelled(key), merges, [], morphemes) == key.split()
    assert ref.learn_bpe_protected(freqs, num_merges, []) == ref.learn_bpe(freqs, num_merges)


def test_tokenize_protected_entities():
    entities = ["Port", "Port Halden", "Port Halden Bay", "Mira Okonkwo"]
    assert ref.tokenize_protected(
        "We met MIRA  okonkwo, at port halden bay.", [], entities, []
    ) == [
        "w", "e", "</w>", "m", "e", "t", "</w>", "mira okonkwo</w>", "a", "t", "</w>",
        "port halden bay</w>",
    ]
    assert ref.tokenize_protected("port hal", [], entities, []) == ["port</w>", "h", "a", "l",
                                                                    "</w>"]
    assert ref.tokenize_protected("", [("a", "b")], entities, ["ing"]) == []


def test_tokenize_protected_applies_merges_to_the_stem_only():
    merges = [("a", "l"), ("al", "k"), ("k", "i")]
    assert ref.tokenize_protected("walking sing", merges, [], ["ing"]) == [
        "w", "alk", "ing</w>", "s", "i", "n", "g", "</w>",
    ]
    assert ref.tokenize("walking", merges) == ["w", "alk", "i", "n", "g", "</w>"]

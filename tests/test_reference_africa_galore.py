"""The Africa Galore lab's references: the weighted trainer and the stand-in data.

The hidden tests of ``learn_fast`` trust ``weighted_bpe`` to give exactly the merges of
``char_bpe``, ties included; these tests are where that trust is earned.
"""
from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_labs.reference import char_bpe, weighted_bpe
from bpe_labs.standins import africa_galore as standin

# Few letters and short words: many repeated words and many tied counts.
texts = st.lists(
    st.text(alphabet="ab c", max_size=30),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(dataset=texts, num_merges=st.integers(min_value=0, max_value=15))
def test_weighted_trainer_learns_the_naive_merges(dataset, num_merges):
    merges, vocabulary, _ = char_bpe.learn_bpe(dataset, num_merges)
    assert weighted_bpe.learn_bpe_weighted(dataset, num_merges) == (merges, vocabulary)


def test_weighted_trainer_on_a_larger_corpus_with_ties():
    rng = random.Random(7)
    words = ["".join(rng.choice("abcd") for _ in range(rng.randint(1, 6))) for _ in range(40)]
    dataset = [" ".join(rng.choice(words) for _ in range(200)) for _ in range(3)]
    naive_merges, naive_vocabulary, _ = char_bpe.learn_bpe(dataset, 40)
    assert weighted_bpe.learn_bpe_weighted(dataset, 40) == (naive_merges, naive_vocabulary)


def test_word_frequencies_keep_first_appearance_order():
    assert list(weighted_bpe.word_frequencies(["b a  b", "c a"]).items()) == [
        ("b", 2), ("a", 2), ("c", 1),
    ]


def test_weighted_trainer_weights_by_frequency():
    # Counted once per distinct word, every pair here occurs once and ('c', 'd') would win the tie;
    # weighted by frequency, ('a', 'b') occurs three times.
    assert weighted_bpe.learn_bpe_weighted(["cd ce ab ab ab"], 1)[0] == [("a", "b")]


def test_standin_is_deterministic_labelled_and_sized(tmp_path):
    first = standin.write(tmp_path / "one")
    second = standin.write(tmp_path / "two")
    assert [p.name for p in first] == ["africa_galore.json"]
    assert first[0].read_bytes() == second[0].read_bytes()
    records = json.loads(first[0].read_text(encoding="utf-8"))
    assert len(records) == standin.SMALL_PARAGRAPHS
    assert all(record["standin"] is True and record["description"] for record in records)


def test_full_size_standin_matches_the_real_corpus_size(tmp_path):
    (path,) = standin.write(tmp_path, full_size=True)
    records = json.loads(path.read_text(encoding="utf-8"))
    words = sum(len(char_bpe.split_words(record["description"])) for record in records)
    assert len(records) == standin.FULL_SIZE_PARAGRAPHS
    assert 28_000 <= words <= 34_000


def test_committed_standin_is_current(tmp_path):
    from pathlib import Path

    committed = Path(__file__).resolve().parents[1] / "data" / "standins" / "africa_galore.json"
    (fresh,) = standin.write(tmp_path)
    assert committed.read_bytes() == fresh.read_bytes()

"""Lab 7's reference tokenizer (``bpe_labs/reference/bpe_tokenizer.py``) against oracles no one here
wrote.

References: ``tiktoken.Encoding`` built from the same ranks (OpenAI's Rust encoder), tiktoken's own
loader of GPT-2's files, ``tokenizers``' GPT-2 pre-tokenizer (Hugging Face's Rust one), and CS336's
definition of training written here on bytes from scratch. Every vocabulary is one the course trains
itself on text it wrote; the texts encoded are texts that training never saw. Never GPT-2's own
files: they are OpenAI's.
"""
from __future__ import annotations

import json

import pytest
import tiktoken
from hypothesis import given, settings, strategies as st
from tokenizers.pre_tokenizers import ByteLevel

from bpe_labs.reference import bpe_tokenizer as ref

EOT, PAD = "<|endoftext|>", "<|pad|>"

# Text we wrote for training: several scripts, numbers, contractions, white space, documents cut by
# EOT.
TRAINING = EOT.join(
    [
        "The tide comes in at noon, and the boats come home. We'll wait; they're late, aren't "
        "they? "
        * 4, "Η παλίρροια έρχεται το μεσημέρι, και οι βάρκες γυρίζουν. 12 βάρκες, 34 ψάρια! " * 4,
        "Прилив приходит в полдень, и лодки возвращаются домой.\n\n  Мы ждём. " * 4,
        "Le café est prêt à 7h30 ; la crème brûlée coûte 4,50 €.\tMerci ! " * 4,
        "潮水中午来，船回家了。 我们等着。 🌊⛵🐟 " * 4,
    ]
)


@pytest.fixture(scope="module")
def trained():
    return ref.train_bpe_on_text(TRAINING, 256 + 2 + 400, [EOT, PAD])


@pytest.fixture(scope="module")
def both(trained):
    """The reference Tokenizer and a tiktoken Encoding built from
    the same ranks, in our layout of ids and in GPT-2's."""
    vocab, merges = trained
    layout = ref.gpt2_layout(merges, [EOT])
    return [(ref.Tokenizer(vocab, merges, [EOT, PAD]), ref.tiktoken_encoding(vocab, [EOT, PAD]),
             {EOT, PAD}),
            (ref.Tokenizer(layout, merges, [EOT]), ref.tiktoken_encoding(layout, [EOT]), {EOT})]


# Characters of many scripts and kinds: letters, marks, digits of other systems, white space of
# every sort, punctuation, emoji with modifiers and joiners, and lone surrogates. (Not any code
# point: the Unicode tables of `regex`, tiktoken's Rust regex and Hugging Face's Oniguruma differ on
# characters assigned recently, which no text here relies on.)
ALPHABET = list("abcxyzABQ' .,;:!?-_()[]\"0123456789\n\t\r\x0b\x0c") + list(
    "ÀéñüßŁ" "αβγΩάώ" "жЩёї" "ש׳ם" "عربي٣٤" "हिन्दी" "ไทย" "日本語中文" "한국어" "ქართ" "✓€£¥©™"
) + ["\u00a0", "\u2003", "\u3000", "\u200d", "\u0301", "😀", "👍🏽", "🇬🇷", "❤️", "\ud800", "\udfff"]
WORDS = [EOT, PAD, "'s", "'ll", "  ", "\n\n", "tide", "βάρκες", "лодки", "café", "潮水"]
texts = st.lists(st.one_of(st.sampled_from(ALPHABET), st.sampled_from(WORDS)), max_size=40).map(
    "".join
)


@settings(max_examples=250)
@given(texts)
def test_reference_tokenizer_agrees_with_tiktoken_built_from_the_same_ranks_on_unseen_text(
    both, text
):
    """Also where byte b is not id b (GPT-2's own layout of ids; tiktoken's ranks are those ids)."""
    for tokenizer, encoding, specials in both:
        assert tokenizer.encode(text) == encoding.encode(text, allowed_special=specials)


def test_gpt2_layout_puts_the_printable_bytes_first(trained):
    vocab = ref.gpt2_layout(trained[1], [EOT])
    assert (
        vocab[0] == b"!"
        and vocab[188] == bytes([0])
        and vocab[220] == b" "
        and vocab[len(vocab) - 1] == EOT.encode()
    )


def test_the_hidden_tests_texts_agree_with_tiktoken_too(trained):
    vocab, merges = trained
    tokenizer = ref.Tokenizer(vocab, merges, [EOT, PAD])
    encoding = ref.tiktoken_encoding(vocab, [EOT, PAD])
    for text in ["مرحبا بالعالم، البحر هادئ اليوم", "नमस्ते दुनिया", "ทะเลสงบวันนี้",
                 "海は静かです。 바다가 조용합니다.",
                 "👩🏽‍🚀 🇬🇷 ❤️‍🔥 1234567890", "We'll see: it's 9:45pm...\n\n\tOK?  ",
                 "\udfff\ud83d\ude00 \ud800", "Море\nи\r\nсолнце   "]:
        assert tokenizer.encode(text) == encoding.encode(text, allowed_special={EOT, PAD})


@settings(max_examples=200)
@given(st.lists(st.sampled_from(ALPHABET[:-2] + WORDS[2:]), max_size=40).map("".join))
def test_pretokenize_is_gpt2_s_pre_tokenizer_as_hugging_face_has_it(text):
    """Without special tokens, GPT-2's regular expression
    in `regex` cuts as `tokenizers`' ByteLevel does."""
    library = [ref.token_bytes(piece).decode("utf-8")
               for piece, _ in ByteLevel(add_prefix_space=False).pre_tokenize_str(text)]
    assert ref.pretokenize(text, []) == library
    assert "".join(ref.pretokenize(text, [EOT])) == text


def test_special_tokens_are_whole_and_the_longest_wins():
    assert ref.pretokenize("a<|endoftext|><|endoftext|> b", [EOT, EOT + EOT]) == [
        "a", EOT + EOT, " b",
    ]
    assert ref.pretokenize("a<|endoftext|><|endoftext|> b", [EOT]) == ["a", EOT, EOT, " b"]
    assert ref.split_on_special_tokens("x[SEP]y|z", ["[SEP]", "|"]) == ["x", "[SEP]", "y", "|", "z"]
    assert (
        ref.split_on_special_tokens("", [EOT]) == [] and ref.split_on_special_tokens("", []) == []
    )


def train_from_bytes(
    text: str, vocab_size: int, special_tokens: list[str]
) -> list[tuple[bytes, bytes]]:
    """CS336's train_bpe, written here on bytes from scratch:
    every merge recounted, ties to max((count, pair))."""
    import regex

    counts: dict[tuple[bytes, ...], int] = {}
    for piece in ref.split_on_special_tokens(text, special_tokens):
        if piece in special_tokens:
            continue
        for pretoken in regex.findall(ref.GPT2_PATTERN, piece):
            word = tuple(bytes([byte]) for byte in pretoken.encode("utf-8"))
            counts[word] = counts.get(word, 0) + 1
    merges: list[tuple[bytes, bytes]] = []
    while 256 + len(special_tokens) + len(merges) < vocab_size:
        pairs: dict[tuple[bytes, bytes], int] = {}
        for word, count in counts.items():
            for pair in zip(word, word[1:]):
                pairs[pair] = pairs.get(pair, 0) + count
        if not pairs:
            break
        best = max(pairs, key=lambda pair: (pairs[pair], pair))
        merges.append(best)
        merged = {}
        for word, count in counts.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + count
        counts = merged
    return merges


@settings(max_examples=80)
@given(
    st.lists(st.sampled_from(list("ab z\n\t'1é€ł😀") + [EOT, "za", "  "]), max_size=50).map(
        "".join
    ), st.integers(0, 30),
)
def test_training_is_cs336_s_definition_on_bytes(text, merges_wanted):
    vocab, merges = ref.train_bpe_on_text(text, 257 + merges_wanted, [EOT])
    assert merges == train_from_bytes(text, 257 + merges_wanted, [EOT])
    assert vocab == {**{i: bytes([i]) for i in range(256)}, 256: EOT.encode(),
                     **{257 + r: a + b for r, (a, b) in enumerate(merges)}}


def test_training_reads_the_file(tmp_path):
    path = ref.write_text(TRAINING, tmp_path)
    assert ref.train_bpe(path, 300, [EOT, PAD]) == ref.train_bpe_on_text(TRAINING, 300, [EOT, PAD])


@settings(max_examples=200)
@given(texts)
def test_decode_of_encode_is_the_text_with_lone_surrogates_replaced(trained, text):
    tokenizer = ref.Tokenizer(*trained, [EOT, PAD])
    assert tokenizer.decode(tokenizer.encode(text)) == ref.fix_surrogates(text)
    assert ref.fix_surrogates(text) == text or any(0xD800 <= ord(c) <= 0xDFFF for c in text)


@settings(max_examples=200)
@given(
    st.lists(
        st.lists(st.sampled_from(list("ab z\t'1é!") + [EOT, "  ", "'ll"]), max_size=6).map(
            lambda c: "".join(c) + "\n"
        ), max_size=8,
    ), st.booleans(),
)
def test_encode_iterable_gives_encode_s_ids_holding_back_one_pre_token(
    trained, lines, last_without_new_line
):
    """A stream of lines: the ids of the whole text; each pre-token encoded on its own, and
    before the next line is read, everything read but its last pre-token (what the lab's
    stream_trace measures)."""
    if lines and last_without_new_line:
        lines[-1] = lines[-1][:-1]
    tokenizer = ref.Tokenizer(*trained, [EOT])
    assert list(tokenizer.encode_iterable(iter(lines))) == tokenizer.encode("".join(lines))
    pieces, ids, yielded = [], [], []

    class Recorder(ref.Tokenizer):
        def encode(self, text):
            pieces.append(text)
            return list(text.encode("utf-8"))

    def one_at_a_time():
        for line in lines:
            yielded.append(len(ids))
            yield line

    ids.extend(
        Recorder({i: bytes([i]) for i in range(256)}, [], [EOT]).encode_iterable(one_at_a_time())
    )
    assert pieces == ref.pretokenize("".join(lines), [EOT])
    assert yielded[1:] == ref.stream_requirements(lines, [EOT])


def test_per_line_pre_tokens_are_not_the_whole_text_s_where_white_space_runs_over_lines(trained):
    """Why the lab's stream holds back a pre-token: a run
    of white space over two lines is one pre-token."""
    for lines, whole in [(["tide\n", "\n"], ["tide", "\n\n"]),
                         (["x\n", "  y"], ["x", "\n ", " y"])]:
        assert ref.pretokenize("".join(lines), []) == whole
        assert [piece for line in lines for piece in ref.pretokenize(line, [])] != whole
        tokenizer = ref.Tokenizer(*trained, [EOT])
        assert list(tokenizer.encode_iterable(lines)) == tokenizer.encode("".join(lines))


def test_gpt2_files_written_and_read_back_with_our_reader_and_tiktoken_s(trained, tmp_path):
    """GPT-2's file format, with merges the course trained: Tokenizer.from_files and tiktoken's
    own loader of GPT-2's files (data_gym_to_mergeable_bpe_ranks, which checks the two files
    agree) encode alike."""
    _, merges = trained
    vocab = ref.gpt2_layout(merges, [EOT])
    encoder_json, vocab_bpe = ref.write_gpt2_files(vocab, merges, tmp_path / "gpt2")
    assert vocab_bpe.read_text(encoding="utf-8").startswith("#version: 0.2\n")
    assert json.loads(encoder_json.read_text(encoding="utf-8"))["Ġ"] == 220
    loaded = ref.Tokenizer.from_files(encoder_json, vocab_bpe, [EOT])
    assert loaded.vocab == vocab and loaded.merges == merges
    encoding = ref.tiktoken_gpt2_from_files(encoder_json, vocab_bpe)
    assert isinstance(encoding, tiktoken.Encoding)
    for text in ["Tide, boats and лодки at noon.", "潮水 🌊\n\n  βάρκες" + EOT + "We'll",
                 TRAINING[:500]]:
        assert loaded.encode(text) == encoding.encode(text, allowed_special={EOT})


def test_from_files_skips_only_the_version_line(tmp_path):
    vocab = {**{i: bytes([i]) for i in range(256)}, 256: b"##", 257: b"#version"}
    merges = [(b"#", b"#"), (b"#", b"version")]
    vocab_text, merges_text = ref.gpt2_files_text({**vocab, 258: b"version"}, merges)
    (tmp_path / "v.json").write_text(vocab_text, encoding="utf-8")
    (tmp_path / "m.txt").write_text(merges_text + "\n", encoding="utf-8")
    assert ref.Tokenizer.from_files(tmp_path / "v.json", tmp_path / "m.txt").merges == merges

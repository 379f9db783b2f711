"""The NY Constitution lab's references: the greedy tokenizer, the vocabulary builder, the loader,
the stand-in.

The hidden tests trust ``greedy_vocab`` as the definition of ``build_vocab``; these tests are
where that trust is earned (properties checked independently of the implementation), where the
solution notebook's fast ``build_vocab`` is shown to return exactly what the definition returns,
and where the notebook's loader is shown to decode the stand-in without mojibake.
"""
from __future__ import annotations

import doctest
import re
from collections import Counter

import html2text
import nbformat
import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_labs import ROOT as REPO_ROOT
from bpe_labs.reference import greedy_vocab as ref
from bpe_labs.standins import ny_constitution as standin

NOTEBOOK = REPO_ROOT / "solutions" / "ny_constitution.ipynb"

# Few letters: many repeated pairs, many ties, many tokens that are prefixes of others.
chunk_lists = st.lists(st.text(alphabet="ab c", max_size=20), max_size=5)
vocab_and_chunk = st.tuples(
    st.lists(st.text(alphabet="ab c", min_size=1, max_size=4), max_size=8),
    st.text(alphabet="ab c", max_size=20),
)


def notebook_cells(*grade_ids: str) -> str:
    """Source of the notebook cells with these grade_ids,
    in notebook order, IPython magics removed."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    sources = [cell.source for cell in notebook.cells
               if cell.metadata.get("nbgrader", {}).get("grade_id") in grade_ids]
    assert len(sources) == len(grade_ids), "a cell is missing from the solution notebook"
    # `%pip install` only runs in Colab; outside IPython the line must still parse.
    return "\n\n".join(re.sub(r"^(\s*)%.*$", r"\1pass", source, flags=re.M) for source in sources)


def run_cells(*grade_ids: str) -> dict:
    namespace: dict = {}
    exec(compile(notebook_cells(*grade_ids), str(NOTEBOOK), "exec"), namespace)
    return namespace


SOLUTION = run_cells("setup", "tokenize_solution", "base_vocab_solution", "to_pairs_solution",
                     "next_pair_solution", "build_vocab_solution")


def merge_in_place_build(chunks: list[str], target_size: int) -> list[str]:
    """BPE's shortcut: merge the chosen pair inside the previous tokens instead of re-tokenizing."""
    vocab = ref.get_base_vocab(chunks)
    sequences = [list(chunk) for chunk in chunks]
    while len(vocab) < target_size:
        counts: Counter = Counter()
        for tokens in sequences:
            counts.update(zip(tokens, tokens[1:]))
        if not counts:
            break
        left, right = max(counts, key=counts.get)
        vocab.append(left + right)
        merged_sequences = []
        for tokens in sequences:
            merged, i = [], 0
            while i < len(tokens):
                if i + 1 < len(tokens) and (tokens[i], tokens[i + 1]) == (left, right):
                    merged.append(left + right)
                    i += 2
                else:
                    merged.append(tokens[i])
                    i += 1
            merged_sequences.append(merged)
        sequences = merged_sequences
    return vocab


# ---------------------------------------------------------------- the reference


def test_reference_doctests():
    assert doctest.testmod(ref).failed == 0


@settings(max_examples=300, deadline=None)
@given(vocab_and_chunk)
def test_tokenize_is_the_longest_match_at_every_position(case):
    extra, chunk = case
    vocab = list("ab c") + extra
    tokens = ref.tokenize(chunk, vocab)
    assert "".join(tokens) == chunk
    position = 0
    for token in tokens:
        assert token in vocab
        longer = [t for t in vocab if len(t) > len(token) and chunk.startswith(t, position)]
        assert not longer, f"{longer} fits at {position} and is longer than {token!r}"
        position += len(token)


def test_tokenize_examples_of_the_exercise():
    vocab = [" wo", "rld", "he", "llo"]
    assert ref.tokenize("hello world", vocab) == ["he", "llo", " wo", "rld"]
    assert ref.tokenize("hehehe", vocab) == ["he", "he", "he"]
    assert ref.tokenize("hello world", vocab + [" world"]) == ["he", "llo", " world"]
    assert ref.tokenize("", vocab) == []


@pytest.mark.parametrize("chunk, rest", [("hello?", "?"), ("heLlo", "Llo"), ("xhe", "xhe")])
def test_tokenize_names_the_text_it_cannot_match(chunk, rest):
    with pytest.raises(ValueError, match=re.escape(repr(rest))):
        ref.tokenize(chunk, [" wo", "rld", "he", "llo"])


def test_pairs_never_cross_chunks_and_ties_go_to_the_first_seen():
    assert ref.next_most_frequent_pair(["pa", "bq", "ra", "bs"], list("abpqrs")) == ("p", "a")
    assert ref.next_most_frequent_pair(["pabqrabs"], list("abpqrs")) == ("a", "b")
    assert ref.next_most_frequent_pair(["ab", "ba"], ["a", "b"]) == ("a", "b")
    assert ref.next_most_frequent_pair(["ba", "ab"], ["a", "b"]) == ("b", "a")
    assert ref.next_most_frequent_pair(["a", "", "b"], ["a", "b"]) is None


@settings(max_examples=300, deadline=None)
@given(chunk_lists, st.integers(min_value=0, max_value=25))
def test_build_vocab_properties(chunks, target_size):
    vocab = ref.build_vocab(chunks, target_size)
    base = sorted(set("".join(chunks)))
    assert vocab[:len(base)] == base
    assert len(vocab) == len(set(vocab)), "a token was added twice"
    assert len(vocab) <= max(target_size, len(base))
    if len(vocab) < target_size:  # stopped early: no chunk may have two tokens left
        assert all(len(ref.tokenize(chunk, vocab)) < 2 for chunk in chunks)
    for index in range(len(base), len(vocab)):
        # The pair behind each token: its longest earlier prefix and the rest (the notebook's
        # merges_from_vocab relies on this).
        token, earlier = vocab[index], set(vocab[:index])
        left = max((token[:cut] for cut in range(1, len(token)) if token[:cut] in earlier), key=len)
        assert token[len(left):] in earlier


def test_build_vocab_examples_of_the_notebook():
    assert ref.build_vocab(["hello world", "hehehe"], 12) == [" ", "d", "e", "h", "l", "o", "r",
                                                              "w", "he", "hehe", "hel", "hell"]
    assert ref.build_vocab(["abab", "ab"], 5) == ["a", "b", "ab", "abab"]
    assert ref.build_vocab(["ba", "c"], 2) == ["a", "b", "c"]
    assert ref.build_vocab(["hen", "the"], 7) == ["e", "h", "n", "t", "he", "hen", "the"]


def test_merging_in_place_is_not_greedy_retokenization():
    # The hidden tests use this case to catch BPE's shortcut; it must keep telling them apart.
    assert merge_in_place_build(["bb", "cbcbb"], 5) != ref.build_vocab(["bb", "cbcbb"], 5)


# ---------------------------------------------------------------- the solution's fast build_vocab


@settings(max_examples=400, deadline=None)
@given(chunk_lists, st.integers(min_value=0, max_value=30))
def test_fast_build_vocab_returns_what_the_definition_returns(chunks, target_size):
    assert SOLUTION["build_vocab"](list(chunks), target_size) == ref.build_vocab(
        chunks, target_size
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["the hen", "then", "the", "hen the then", "", "a"]), max_size=8),
       st.integers(min_value=0, max_value=40))
def test_fast_build_vocab_with_repeated_word_like_chunks(chunks, target_size):
    assert SOLUTION["build_vocab"](list(chunks), target_size) == ref.build_vocab(
        chunks, target_size
    )


@settings(max_examples=200, deadline=None)
@given(vocab_and_chunk)
def test_solution_tokenize_matches_the_reference(case):
    extra, chunk = case
    vocab = list("ab c") + extra
    assert SOLUTION["tokenize"](chunk, vocab) == ref.tokenize(chunk, vocab)


# ---------------------------------------------------------------- the stand-in and the loader


def test_standin_is_deterministic_labelled_and_encoded_as_declared(tmp_path):
    first = standin.write(tmp_path / "one")
    second = standin.write(tmp_path / "two")
    assert [path.name for path in first] == ["ny01.asp"]
    raw = first[0].read_bytes()
    assert raw == second[0].read_bytes()
    assert b"charset=windows-1252" in raw
    text = raw.decode("windows-1252")  # strict: every byte is windows-1252
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")  # so a decoder that assumes UTF-8 is caught
    assert re.search(r"<title>[^<]*STAND-IN", text)
    for character in "£§“”‘’—é":
        assert character in text


def test_committed_standin_is_up_to_date(tmp_path):
    committed = REPO_ROOT / "data" / "standins" / "ny01.asp"
    assert committed.read_bytes() == standin.write(tmp_path)[0].read_bytes()


def page_text(html: str) -> str:
    converter = html2text.HTML2Text()
    converter.ignore_links = True
    converter.ignore_images = True
    return converter.handle(html)


def test_full_size_standin_has_the_size_of_the_real_page(tmp_path):
    words = len(
        page_text(standin.write(tmp_path, full_size=True)[0].read_bytes().decode("cp1252")).split()
    )
    assert 35_000 <= words <= 45_000


LOADER = notebook_cells("setup", "load_page")
LOADER_FUNCTIONS = LOADER.split("\npage_bytes, page_source = load_page_bytes()")[0]


def loader_namespace() -> dict:
    namespace: dict = {}
    exec(compile(LOADER_FUNCTIONS, str(NOTEBOOK), "exec"), namespace)
    return namespace


MOJIBAKE = re.compile(r"[ÂÃ][\x80-\xbf]|â€|[\x80-\x9f]|\ufffd")


def test_loader_decodes_the_standin_without_mojibake(tmp_path):
    loader = loader_namespace()
    raw = standin.write(tmp_path)[0].read_bytes()
    assert loader["page_encoding"](raw)[0] == "cp1252"
    html = loader["decode_page"](raw)
    assert not MOJIBAKE.search(html)
    for character in "£§“”‘’—é":
        assert character in html


@pytest.mark.parametrize("label", ["iso-8859-1", "ISO-8859-1", "latin-1", "us-ascii"])
def test_labels_browsers_read_as_windows_1252(label):
    raw = (
        f'<meta http-equiv="Content-Type" content="text/html; charset={label}"><p>“£20”</p>'.encode(
            "cp1252"
        )
    )
    assert "“£20”" in loader_namespace()["decode_page"](raw)


@pytest.mark.parametrize("page, expected", [
    ('<meta charset="utf-8"><p>£20 — “x”</p>'.encode("utf-8"), "utf-8"),
    ("\ufeff<p>£20 — “x”</p>".encode("utf-8"), "utf-8-sig"),
    ("<p>£20 — “x”</p>".encode("utf-8"), "utf-8"),  # no charset declared, valid UTF-8
])
def test_utf8_pages(page, expected):
    loader = loader_namespace()
    assert loader["page_encoding"](page)[0] == expected
    assert "£20 — “x”" in loader["decode_page"](page)


def test_undeclared_windows_1252_page_is_not_read_as_a_neighbouring_code_page(tmp_path):
    raw = standin.write(tmp_path)[0].read_bytes()
    undeclared = re.sub(rb"<meta[^>]*>", b"", raw)
    html = loader_namespace()["decode_page"](undeclared)
    assert "£" in html and "“" in html and not MOJIBAKE.search(html)


def test_loader_cells_load_the_standin_and_drop_links_and_images(tmp_path, monkeypatch, capsys):
    standin.write(tmp_path)
    monkeypatch.setenv("BPE_LABS_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(notebook_cells("setup", "load_page", "chunks"), str(NOTEBOOK), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "$BPE_LABS_DATA/ny01.asp" in printed and "STAND-IN" in printed
    assert str(tmp_path) not in printed, "the loader must not print absolute paths"
    text = "\n\n".join(namespace["chunks"])
    assert "£" in text and not MOJIBAKE.search(text)
    assert ".asp" not in text and "http" not in text, "links must be dropped"
    assert "logo" not in text.lower() and ".gif" not in text, "images must be dropped"
    assert all(chunk == chunk.strip() and chunk for chunk in namespace["chunks"])
    assert not any("\n\n" in chunk for chunk in namespace["chunks"])


def test_loader_says_what_to_download_when_everything_fails(tmp_path, monkeypatch):
    monkeypatch.delenv("BPE_LABS_DATA", raising=False)
    # no data/ here, nor in ../data (tmp_path's parent holds no ny01.asp)
    monkeypatch.chdir(tmp_path)
    assert not (tmp_path.parent / "data" / "ny01.asp").exists()

    def offline(*args, **kwargs):
        raise requests.ConnectionError("offline")

    monkeypatch.setattr(requests, "get", offline)
    with pytest.raises(FileNotFoundError) as error:
        exec(compile(LOADER, str(NOTEBOOK), "exec"), {})
    message = str(error.value)
    assert "https://avalon.law.yale.edu/18th_century/ny01.asp" in message
    assert "data/ny01.asp" in message and "BPE_LABS_DATA" in message

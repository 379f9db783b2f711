"""Offline, CS336's ``tiktoken.get_encoding("gpt2")`` is tiktoken's own ``gpt2`` definition (its
pattern, ``<|endoftext|>`` = 50256) with the ranks read from the GPT-2 vocabulary CS336's
fixtures hold (``gpt2_vocab.json``, GPT-2's ``encoder.json``, whose ids are the ranks): the
download is the only difference. Copied with ``adapters.py`` beside CS336's tests
(``tests/test_cs336_tests.py``)."""
from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
END_OF_TEXT = "<|endoftext|>"


@functools.lru_cache(maxsize=None)
def gpt2_from_fixtures():
    import tiktoken
    from tiktoken_ext.openai_public import r50k_pat_str

    from .common import gpt2_bytes_to_unicode

    byte_of = {character: byte for byte, character in gpt2_bytes_to_unicode().items()}
    vocab = json.loads((FIXTURES / "gpt2_vocab.json").read_text(encoding="utf-8"))
    ranks = {bytes(byte_of[c] for c in token): rank for token, rank in vocab.items()
             if token != END_OF_TEXT}
    return tiktoken.Encoding(name="gpt2", pat_str=r50k_pat_str, mergeable_ranks=ranks,
                             special_tokens={END_OF_TEXT: vocab[END_OF_TEXT]},
                             explicit_n_vocab=len(vocab))


@pytest.fixture(autouse=True)
def gpt2_without_download(monkeypatch):
    import tiktoken

    real = tiktoken.get_encoding
    monkeypatch.setattr(tiktoken, "get_encoding",
                        lambda name: gpt2_from_fixtures() if name == "gpt2" else real(name))

"""The tokenizer of lab 7 ("a tokenizer you could ship"), on CS336 assignment 1's contract.

``train_bpe(input_path, vocab_size, special_tokens) -> (vocab, merges)`` and
``Tokenizer(vocab, merges, special_tokens)`` with ``encode``, ``decode``, ``encode_iterable`` and
``from_files``: ids, bytes, special tokens and GPT-2's regular expression. Nothing here counts a
pair: training is ``fast_trainer.train_byte_level_bpe`` (its byte mode, CS336's tie rule) on the
pre-tokens of ``pretokenize.split_gpt2``; encoding merges with ``base.merge_pair``.

* Pre-tokenization: special tokens are split out first (scanning left to right, the longest
  wins where two start at the same place), and each other piece is cut with GPT-2's pattern.
* Ids: 0-255 are the bytes, then the special tokens, then one id per merge (``train_bpe``); a
  loaded vocabulary may order them otherwise (GPT-2's own does).
* ``encode``: within each pre-token, the adjacent pair of lowest rank (its place in ``merges``)
  is merged, again and again, until no adjacent pair is a merge. Lone surrogates, which have no
  UTF-8 bytes, become U+FFFD first, as ``tiktoken`` does.
* ``decode``: the tokens' bytes, joined, decoded with ``errors="replace"``.
* ``encode_iterable``: text held back is only the last pre-token of what was read.

    >>> vocab, merges = train_bpe_on_text("low low lower<|endoftext|>low", 259, ["<|endoftext|>"])
    >>> merges
    [(b'o', b'w'), (b'l', b'ow')]
    >>> tokenizer = Tokenizer(vocab, merges, ["<|endoftext|>"])
    >>> tokenizer.encode("slow<|endoftext|>")
    [115, 258, 256]
    >>> tokenizer.decode([115, 258, 256])
    'slow<|endoftext|>'
"""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from bpe_labs.reference.base import BYTE_CHARACTERS, BYTE_OF_CHARACTER, merge_pair
from bpe_labs.reference.fast_trainer import train_byte_level_bpe
from bpe_labs.reference.pretokenize import GPT2_PATTERN, split_gpt2
from bpe_labs.reference.pretokenize import split_on_special_tokens as split_on_special

GPT2_VERSION_LINE = "#version: 0.2"  # the first line of GPT-2's merges file

Vocab = dict[int, bytes]
Merges = list[tuple[bytes, bytes]]


def split_on_special_tokens(text: str, special_tokens: list[str]) -> list[str]:
    """``text`` in pieces, each special token a piece of its own, no empty piece.

    >>> split_on_special_tokens("Hi<|endoftext|>", ["<|endoftext|>"])
    ['Hi', '<|endoftext|>']
    >>> split_on_special_tokens("a<|x|><|x|>b", ["<|x|>", "<|x|><|x|>"])  # the longest wins
    ['a', '<|x|><|x|>', 'b']
    """
    return split_on_special(text, special_tokens, keep=True)


def pretokenize(text: str, special_tokens: list[str]) -> list[str]:
    """Special tokens whole, every other piece cut with GPT-2's pattern; the pieces join to
    ``text``.

    >>> pretokenize("It's 2024!<|endoftext|>  ok", ["<|endoftext|>"])
    ['It', "'s", ' 2024', '!', '<|endoftext|>', ' ', ' ok']
    """
    specials = set(special_tokens)
    return [pretoken for piece in split_on_special_tokens(text, special_tokens)
            for pretoken in ([piece] if piece in specials else split_gpt2(piece))]


def fix_surrogates(text: str) -> str:
    """``text`` with every lone surrogate as U+FFFD (a pair written as two code points joined), as
    tiktoken does.

    >>> fix_surrogates("a\\ud800b"), fix_surrogates("\\ud83d\\ude00") == "😀"
    ('a�b', True)
    """
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def train_bpe_on_text(
    text: str, vocab_size: int, special_tokens: list[str]
) -> tuple[Vocab, Merges]:
    """``train_bpe`` on ``text`` itself: the byte-level
    trainer on GPT-2's pre-tokens (regular expression)."""
    return train_byte_level_bpe(text, vocab_size, special_tokens, split=split_gpt2)


def train_bpe(
    input_path: str | os.PathLike, vocab_size: int, special_tokens: list[str]
) -> tuple[Vocab, Merges]:
    """CS336's ``train_bpe``: the UTF-8 text of ``input_path``, trained to ``vocab_size`` tokens.

    ``vocab``: ids 0-255 the bytes, then the special tokens in the order given, then ``a + b`` per
    merge; ``merges`` in the order learned; on equal counts the greater pair of bytes is merged.
    """
    with open(input_path, encoding="utf-8") as file:
        return train_bpe_on_text(file.read(), vocab_size, special_tokens)


def merge_by_rank(symbols: list[bytes], ranks: dict[tuple[bytes, bytes], int]) -> list[bytes]:
    """Merge the adjacent pair of lowest rank, again and again, until no adjacent pair has a rank.

    >>> merge_by_rank([b"a", b"b", b"c"], {(b"b", b"c"): 0, (b"a", b"b"): 1, (b"a", b"bc"): 2})
    [b'abc']
    """
    while len(symbols) > 1:
        ranked = [(ranks[pair], pair) for pair in zip(symbols, symbols[1:]) if pair in ranks]
        if not ranked:
            break
        symbols = merge_pair(symbols, min(ranked)[1])
    return symbols


class Tokenizer:
    """CS336's ``Tokenizer``; the constructor is the one the lab gives its students."""

    def __init__(self, vocab: Vocab, merges: Merges, special_tokens: list[str] | None = None):
        self.vocab = dict(vocab)
        self.merges = list(merges)
        self.special_tokens = list(special_tokens or [])
        # a special token missing from the vocabulary gets the next id
        for special in self.special_tokens:
            if special.encode("utf-8") not in self.vocab.values():
                self.vocab[max(self.vocab, default=-1) + 1] = special.encode("utf-8")
        self.token_ids = {token: token_id for token_id, token in self.vocab.items()}
        self.merge_ranks = {pair: rank for rank, pair in enumerate(self.merges)}

    def encode(self, text: str) -> list[int]:
        specials = set(self.special_tokens)
        ids = []
        for pretoken in pretokenize(fix_surrogates(text), self.special_tokens):
            if pretoken in specials:
                ids.append(self.token_ids[pretoken.encode("utf-8")])
            else:
                symbols = [bytes([byte]) for byte in pretoken.encode("utf-8")]
                ids += [self.token_ids[token] for token in merge_by_rank(symbols, self.merge_ranks)]
        return ids

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """The ids of ``encode("".join(iterable))``, read lazily: when a line arrives, every
        pre-token of the text held but the last is final (a line ends with whitespace, and the
        regular expression decides a pre-token at most at the next one), so only the last is held
        back.

        >>> tokenizer = Tokenizer({i: bytes([i]) for i in range(256)}, [])
        >>> list(tokenizer.encode_iterable(["a\\n", "\\n"])) == tokenizer.encode("a\\n\\n")
        True
        """
        held = ""
        for chunk in iterable:
            held += chunk
            pieces = pretokenize(held, self.special_tokens)
            for piece in pieces[:-1]:
                yield from self.encode(piece)
            held = pieces[-1] if pieces else ""
        if held:
            yield from self.encode(held)

    def decode(self, ids: list[int]) -> str:
        return b"".join(self.vocab[token_id] for token_id in ids).decode("utf-8", errors="replace")

    @classmethod
    def from_files(cls, vocab_path: str | os.PathLike, merges_path: str | os.PathLike,
                   special_tokens: list[str] | None = None) -> "Tokenizer":
        """A tokenizer from files in GPT-2's format
        (``encoder.json``/``vocab.json``, ``vocab.bpe``/``merges.txt``)."""
        with open(vocab_path, encoding="utf-8") as file:
            printable_vocab = json.load(file)
        vocab = {int(token_id): token_bytes(token) for token, token_id in printable_vocab.items()}
        with open(merges_path, encoding="utf-8") as file:
            lines = [line.rstrip("\n") for line in file]
        merges = []
        for line in lines:
            if line and not line.startswith("#version"):
                first, second = line.split(" ")
                merges.append((token_bytes(first), token_bytes(second)))
        return cls(vocab, merges, special_tokens)


# -- GPT-2's files ------------------------------------------------------------------------------

def token_bytes(printable: str) -> bytes:
    """The bytes a token of GPT-2's files stands for (one printable character per byte).

    >>> token_bytes("Ġcaf"), token_bytes("<|endoftext|>")
    (b' caf', b'<|endoftext|>')
    """
    return bytes([BYTE_OF_CHARACTER[character] for character in printable])


def printable_token(token: bytes) -> str:
    """A token as GPT-2's files write it.

    >>> printable_token(b" caf\\xc3\\xa9")
    'ĠcafÃ©'
    """
    return "".join(BYTE_CHARACTERS[byte] for byte in token)


def gpt2_files_text(vocab: Vocab, merges: Merges) -> tuple[str, str]:
    """The texts of GPT-2's two files (``encoder.json``, ``vocab.bpe``) for ``vocab`` and
    ``merges``.

    >>> gpt2_files_text({0: b" ", 1: b"a", 2: b" a"}, [(b" ", b"a")])
    ('{"Ġ": 0, "a": 1, "Ġa": 2}', '#version: 0.2\\nĠ a\\n')
    """
    vocab_text = json.dumps({printable_token(token): token_id for token_id, token in vocab.items()},
                            ensure_ascii=False)
    merges_text = "".join(f"{printable_token(a)} {printable_token(b)}\n" for a, b in merges)
    return vocab_text, f"{GPT2_VERSION_LINE}\n{merges_text}"


def gpt2_layout(merges: Merges, special_tokens: list[str]) -> Vocab:
    """The vocabulary of ``merges`` laid out as GPT-2's own: the single bytes in the order of
    GPT-2's printable characters (``!`` is id 0, the space id 220), the merged tokens, then the
    special tokens.

    >>> layout = gpt2_layout([(b" ", b"a")], ["<|endoftext|>"])
    >>> layout[0], layout[220], layout[256], layout[257]
    (b'!', b' ', b' a', b'<|endoftext|>')
    """
    in_printable_order = sorted(range(256), key=lambda byte: ord(BYTE_CHARACTERS[byte]))
    tokens = [bytes([byte]) for byte in in_printable_order] + [a + b for a, b in merges]
    tokens += [special.encode("utf-8") for special in special_tokens]
    return dict(enumerate(tokens))


def write_gpt2_files(vocab: Vocab, merges: Merges, folder: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``encoder.json`` and ``vocab.bpe`` (GPT-2's names) into ``folder``; their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab_text, merges_text = gpt2_files_text(vocab, merges)
    (folder / "encoder.json").write_text(vocab_text, encoding="utf-8")
    (folder / "vocab.bpe").write_text(merges_text, encoding="utf-8")
    return folder / "encoder.json", folder / "vocab.bpe"


# -- tiktoken, built from files or ranks (never downloaded)
# -------------------------------------------

def tiktoken_encoding(vocab: Vocab, special_tokens: list[str], pattern: str = GPT2_PATTERN,
                      name: str = "bpe_labs"):
    """A ``tiktoken.Encoding`` whose ranks are ``vocab``'s ids (special tokens apart): it encodes
    as ``Tokenizer(vocab, merges, special_tokens)`` does when ids grow in merge order, as
    training makes them."""
    import tiktoken

    specials = {special.encode("utf-8") for special in special_tokens}
    ranks = {token: token_id for token_id, token in vocab.items() if token not in specials}
    special_ids = {special: token_id for token_id, token in vocab.items()
                   for special in special_tokens
                   if token == special.encode("utf-8")}
    return tiktoken.Encoding(name=name, pat_str=pattern, mergeable_ranks=ranks,
                             special_tokens=special_ids)


def tiktoken_gpt2_from_files(encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike):
    """tiktoken's ``gpt2`` encoding, built from local copies of GPT-2's two files by tiktoken's
    own loader (``tiktoken_ext.openai_public.gpt2`` without the download, with GPT-2's pattern as
    CS336 writes it, which tiktoken's ``r50k_pat_str`` says it is equivalent to; tiktoken's file
    cache is off, since it keys files by path alone)."""
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = ""
    try:
        ranks = data_gym_to_mergeable_bpe_ranks(vocab_bpe_file=str(vocab_bpe),
                                                encoder_json_file=str(encoder_json))
    finally:
        if saved is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = saved
    return tiktoken.Encoding(name="gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                             special_tokens={"<|endoftext|>": len(ranks)})


def stream_requirements(lines: list[str], special_tokens: list[str]) -> list[int]:
    """For each line k after the first: how many UTF-8 bytes of text must have been encoded (and
    their ids yielded) before ``encode_iterable`` reads it: all of the first k lines but their last
    pre-token.

    >>> stream_requirements(["ab cd\\n", "x"], [])
    [5]
    """
    needed, read = [], ""
    for line in lines[:-1]:
        read += line
        pieces = pretokenize(read, special_tokens)
        needed.append(len("".join(pieces[:-1]).encode("utf-8")))
    return needed


def write_text(text: str, folder: str | os.PathLike | None = None) -> Path:
    """``text`` in a new UTF-8 file (for tests of ``train_bpe``'s file argument)."""
    handle, name = tempfile.mkstemp(suffix=".txt", dir=folder)
    with os.fdopen(handle, "w", encoding="utf-8", newline="") as file:
        file.write(text)
    return Path(name)

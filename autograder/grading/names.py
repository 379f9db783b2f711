"""Text a student chose (file names, ids, messages), made safe to show, store and name files after.

* :func:`escaped`: control characters, bidirectional overrides and bytes that are not UTF-8 (which
  Python holds as lone surrogates) written as ``\\xNN`` / ``\\uNNNN``. What a terminal shows of a
  row is then what ``grades.csv`` holds: an ANSI sequence in a file name cannot move the cursor or
  repaint another student's row, and a Latin-1 name from an old LMS export is recorded faithfully.
* :func:`file_name`: a name for a file made from such text: readable when it can be, shortened and
  made unique by a hash when it is long or holds characters a file name should not.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata

# Bidirectional embeddings, overrides and isolates: they
# reorder what a terminal shows ("Trojan Source").
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
# Bytes of a file name's longest component on Linux, macOS
# and Windows file systems; ours stay well under.
NAME_BYTES = 120
_SAFE_NAME = re.compile(r"[\w@+=,. -]+")


def _escape(char: str, keep: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if char in keep:
        return char
    if unicodedata.category(char) in ("Cc", "Cs") or char in BIDI_CONTROLS:
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return char


def escaped(text: str, keep: str = "") -> str:
    """``text`` with its control characters (but those in ``keep``), bidirectional controls and
    undecodable bytes written as escapes; everything else as it is.

    >>> escaped("ann\\x1b[2J_toy.ipynb")
    'ann\\\\x1b[2J_toy.ipynb'
    >>> escaped("caf" + b"\\xe9".decode("utf-8", "surrogateescape"))  # a Latin-1 name
    'caf\\\\xe9'
    >>> escaped("Zoë Ng\\tline\\n", keep="\\n")
    'Zoë Ng\\\\x09line\\n'
    """
    text = str(text)
    if text.isprintable() and text.isascii():
        return text
    return "".join(_escape(char, keep) for char in text)


def terminal(text: object) -> str:
    """A table cell or log field: runs of spaces, tabs and line breaks as one space, the rest
    :func:`escaped`."""
    return escaped(re.sub(r"[ \t\r\n]+", " ", str(text)).strip())


def file_name(text: str, suffix: str = "") -> str:
    """A file name made from ``text``: ``text`` itself when it is short and plain, else a readable
    part and a hash of the whole, so that two different texts never share a name.

    >>> file_name("jdoe_toy_bpe.ipynb", ".json")
    'jdoe_toy_bpe.ipynb.json'
    >>> file_name("x" * 300, ".json")[-22:]
    '-0d4e2ca9e9cbced7.json'
    >>> file_name("a/b") != file_name("a_b")
    True
    """
    text = str(text)
    if _SAFE_NAME.fullmatch(text) and not text.startswith(".") and len(text.encode()) <= NAME_BYTES:
        return text + suffix
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    readable = re.sub(r"[^\w@+=,. -]", "_", escaped(text)).strip(" .")
    while len(readable.encode()) > NAME_BYTES - 20:
        readable = readable[:-1]
    return f"{readable or '_'}-{digest}{suffix}"

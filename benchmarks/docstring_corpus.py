"""English text of a requested size, made on the spot from installed packages' docstrings.

The benchmarks need megabytes of real English, and the machine has no internet and the
repository commits no third-party text. Every Python installation ships plenty of
English, though: the docstrings of the standard library and of site-packages. This
module parses those ``.py`` files with :mod:`ast` (nothing is imported or run), takes
``ast.get_docstring`` of every module, class and function, drops exact duplicates, and
joins them with blank lines until the text reaches the requested size.

The order is deterministic (sorted paths, then source order), so the same installation
always gives the same text; the result is cached outside the repository because parsing
a few thousand files takes a while.

    python benchmarks/docstring_corpus.py --mb 5 --out /tmp/docstrings-5mb.txt
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import os
import sys
import sysconfig
import warnings
from collections.abc import Iterator
from pathlib import Path

MB = 1_000_000  # the sizes are in bytes of UTF-8: 1 MB = 10**6 bytes


def source_roots() -> list[Path]:
    """The standard library first, then site-packages (deduplicated, existing only)."""
    paths = sysconfig.get_paths()
    roots = []
    for key in ("stdlib", "purelib", "platlib"):
        root = Path(paths[key]).resolve()
        if root.is_dir() and root not in roots:
            roots.append(root)
    return roots


def python_files(root: Path, skip: list[Path]) -> Iterator[Path]:
    """Every ``.py`` file under ``root`` in sorted order, not descending into ``skip``.

    ``skip`` keeps the standard library walk out of a site-packages folder inside it.
    """
    for directory, subdirs, files in os.walk(root):
        here = Path(directory)
        subdirs[:] = sorted(d for d in subdirs if here / d not in skip and d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                yield here / name


def docstrings_of_source(source: str) -> Iterator[str]:
    """Docstrings of a module, its classes and functions, in source order.

    ``'\"\"\"Top.\"\"\"\\ndef f():\\n    \"\"\"Inner.\"\"\"'`` -> ``"Top."``, ``"Inner."``
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences in old sources
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):  # Python 2 files, null bytes
            return
    nodes = [tree]
    while nodes:  # depth-first, source order
        node = nodes.pop()
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc and doc.strip():
                yield doc.strip()
        nodes.extend(reversed([child for child in ast.iter_child_nodes(node)
                               if isinstance(child,
                                             (ast.ClassDef, ast.FunctionDef,
                                              ast.AsyncFunctionDef))]))


def iter_docstrings(roots: list[Path] | None = None) -> Iterator[str]:
    """All distinct docstrings of the installation, in a fixed order."""
    roots = roots if roots is not None else source_roots()
    seen: set[bytes] = set()
    for root in roots:
        for path in python_files(root, skip=[r for r in roots if r != root]):
            try:
                source = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            for doc in docstrings_of_source(source):
                digest = hashlib.blake2b(doc.encode("utf-8"), digest_size=16).digest()
                if digest not in seen:
                    seen.add(digest)
                    yield doc


def build_text(num_bytes: int, roots: list[Path] | None = None) -> str:
    """Docstrings joined by blank lines, cut at the first docstring that reaches ``num_bytes``.

    Raises ``RuntimeError`` if the installation has less text than asked for.
    """
    parts: list[str] = []
    size = 0
    for doc in iter_docstrings(roots):
        parts.append(doc)
        size += len(doc.encode("utf-8")) + 2
        if size >= num_bytes:
            text = "\n\n".join(parts)
            return text.encode("utf-8")[:num_bytes].decode("utf-8", errors="ignore")
    raise RuntimeError(f"only {size:,} bytes of docstrings installed, {num_bytes:,} asked for")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bpe-labs"


def docstring_text(megabytes: float, use_cache: bool = True) -> str:
    """``megabytes`` MB of docstring English, from the cache when it was built before.

    The cache key holds the interpreter's version and prefix, so another installation
    (with other docstrings) never reads a stale file.
    """
    num_bytes = int(megabytes * MB)
    key = hashlib.blake2b(
        f"{sys.version}|{sys.prefix}|{num_bytes}".encode(), digest_size=8
    ).hexdigest()
    path = cache_dir() / f"docstrings-{num_bytes}-{key}.txt"
    if use_cache and path.exists():
        return path.read_text(encoding="utf-8")
    text = build_text(num_bytes)
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1.0, help="size in MB (10**6 bytes of UTF-8)")
    parser.add_argument("--out", type=Path,
                        help="write the text here (default: print statistics only)")
    parser.add_argument("--no-cache", action="store_true")
    args = parser.parse_args(argv)
    text = docstring_text(args.mb, use_cache=not args.no_cache)
    words = text.split()
    print(
        f"{len(text.encode('utf-8')):,} bytes, {len(words):,} words, {len(set(words)):,} distinct"
    )
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

"""The pair index of the challenge lab: each adjacent pair -> the words that contain it.

    >>> build_index([(["a", "b"], 1), (["a", "b", "a"], 5)])
    {('a', 'b'): {0, 1}, ('b', 'a'): {1}}
"""
from __future__ import annotations


def build_index(words: list[tuple[list[str], int]]) -> dict[tuple[str, str], set[int]]:
    """Pair -> the set of the indices ``i`` of the words ``words[i]`` that contain it."""
    index: dict[tuple[str, str], set[int]] = {}
    for i, (symbols, _) in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            index.setdefault(pair, set()).add(i)
    return index

"""A stand-in answers in the shape the student chose, where the task allows several.

A task may let a function return a list or a set, a dict or a Counter. When such a function fails
its own part, a later part is graded with the reference's answer in its place
(``grading/stand_ins.py``), and the student's later code, written for their own shape
(``vocabulary.add(...)``), must not fail because the reference chose the other one. So the grader
remembers the shape of what each student function returned on the hidden inputs of its own part
(types only, never values), and casts the reference's answer to it, within a family of
interchangeable containers only.

    >>> shape = shape_of(([["a", "</w>"]], {"a", "</w>"}))
    >>> conform((["x"], ["a", "</w>"]), shape)[1] == {"a", "</w>"}
    True
    >>> type(conform({"a": 1}, shape_of(__import__("collections").Counter(b=2)))).__name__
    'Counter'
    >>> conform([1, 2], shape_of((1, 2)))  # a tuple is never a list: not interchangeable
    [1, 2]
"""
from __future__ import annotations

import collections

# Containers a task may let a student choose between; a value is only ever cast within its family.
_SEQUENCES = (list, set, frozenset)
_MAPPINGS = (dict, collections.Counter, collections.OrderedDict)

# (type, [item shapes]) for a tuple; (type, item shape) for a sequence; (type, key, value) for a
# mapping
Shape = tuple


def shape_of(value, depth: int = 0):
    """The types of ``value``, nested, from its first items (None where nothing tells)."""
    kind = type(value)
    if depth > 8:
        return None
    if kind is tuple:
        return (tuple, [shape_of(item, depth + 1) for item in value])
    if kind in _SEQUENCES:
        first = next(iter(value), None)
        return (kind, shape_of(first, depth + 1) if first is not None else None)
    if kind in _MAPPINGS:
        key, item = next(iter(value.items()), (None, None))
        return (kind, shape_of(key, depth + 1) if key is not None else None,
                shape_of(item, depth + 1) if item is not None else None)
    return (kind,)


def merged(known, new):
    """Two shapes of one function's results together: what one leaves open, the other may tell."""
    if known is None:
        return new
    if new is None or known[0] is not new[0]:
        return known
    if known[0] is tuple:
        if len(known[1]) != len(new[1]):
            return known
        return (tuple, [merged(a, b) for a, b in zip(known[1], new[1])])
    return (known[0], *(merged(a, b) for a, b in zip(known[1:], new[1:])))


def conform(value, shape):
    """``value`` with its containers cast to the types of ``shape`` where both are of one family."""
    if shape is None:
        return value
    kind, want = type(value), shape[0]
    if kind is tuple and want is tuple and len(value) == len(shape[1]):
        return tuple(conform(item, item_shape) for item, item_shape in zip(value, shape[1]))
    if kind in _SEQUENCES and want in _SEQUENCES:
        items = [conform(item, shape[1]) for item in value]
        try:
            return want(items) if want is not kind or items != list(value) else value
        except TypeError:  # items that cannot go into a set
            return value
    if kind in _MAPPINGS and want in _MAPPINGS:
        pairs = {key: conform(item, shape[2]) for key, item in value.items()}
        return want(pairs) if want is not kind or pairs != value else value
    return value

"""``StrEnum``: the engine's words that cross modules (a row's status, a cell's kind and run, an
isolation mode) as enum members that are their own values, on every Python the engine supports.

A member is a ``str`` equal to its value: ``str()``, f-strings, ``json.dumps``, the ``csv`` module
and the database all write the value, so files stay as they were; ``Kind(text)`` reads one back.

>>> class Colour(StrEnum):
...     RED = "red"
>>> Colour.RED == "red", f"{Colour.RED}", str(Colour.RED), Colour("red") is Colour.RED
(True, 'red', 'red', True)
"""
from __future__ import annotations

import enum
import sys

__all__ = ["StrEnum"]

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # Python 3.10 has no enum.StrEnum: the same behaviour, where it matters (str and format)

    class StrEnum(str, enum.Enum):
        """``enum.StrEnum`` of Python 3.11: a member's ``str()`` and format are its value."""

        def __str__(self) -> str:
            return str.__str__(self)

        def __format__(self, format_spec: str) -> str:
            return str.__format__(self, format_spec)

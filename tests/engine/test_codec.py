"""Plain values across the kernel boundary (autograder/kernel/codec.py), with no course and
no kernel: every exact built-in type comes back as itself, anything else is a marker equal
to nothing, and what a kernel could send to hurt the grader is refused before it is used."""
from __future__ import annotations

import collections
import math

import pytest

from autograder.kernel import codec

VALUES = [
    None, True, 0, -(10**40), 1.5, float("inf"), "Ġdé\r\n", b"\x00\xff", [1, [2, (3,)]],
    (), {1, "a"}, frozenset({b"x"}), {"a": [1], ("t", 1): {2: None}},
    collections.Counter("abracadabra"), collections.OrderedDict([("b", 1), ("a", 2)]),
    collections.defaultdict(list, {"k": [1]}),
]


def test_plain_values_come_back_with_their_exact_types():
    # (one test, not one per value: test_engine_toy_course counts this module's tests by their defs)
    for value in VALUES:
        back = codec.decode(codec.encode(value))
        assert back == value and type(back) is type(value), repr(value)
        if isinstance(value, dict):
            assert list(back) == list(value), f"order kept: {value!r}"


def test_nan_comes_back_as_nan():
    assert math.isnan(codec.decode(codec.encode(float("nan"))))


def test_a_value_of_its_own_class_is_a_marker_equal_to_nothing():
    class Sneaky(list):
        def __eq__(self, other):
            return True

    marker = codec.decode(codec.encode(Sneaky([1])))
    assert isinstance(marker, codec.Unsupported)
    assert marker != marker and marker != [1] and marker != Sneaky([1])


def test_what_a_kernel_could_send_to_hurt_the_grader_is_refused():
    deep: list = []
    for _ in range(codec.MAX_DEPTH + 5):
        deep = ["list", [deep]] if deep else ["list", []]
    refused = [
        deep,
        ["int", "9" * (codec.MAX_INT_DIGITS + 1)],
        ["set", [["int", str(k * (2**61 - 1))] for k in range(1000)]],  # one hash for all
        ["no such tag", 1],
        "not even a list",
    ]
    for tagged in refused:
        assert isinstance(codec.decode(tagged), codec.Unsupported), str(tagged)[:60]


def test_pack_and_unpack_carry_plain_data_to_the_kernel():
    value = {"merges": [(b"a", b"b")], "vocab": {0: b"a"}}
    assert codec.unpack(codec.pack(value)) == value
    with pytest.raises(TypeError, match="only plain values"):
        codec.pack(lambda: None)  # never code: plain data only

"""Stand-ins: a failing helper answered by the grader's reference, for one part only, never handed
over.

Reference: the behaviour ``autograder/grading/stand_ins.py`` promises, checked in a real kernel.
"""
import json
import tempfile
from pathlib import Path

import pytest

from autograder.kernel import codec
from autograder.kernel.session import KernelSession, Limits
from autograder.kernel.errors import StudentRaised
from autograder.labs import Part, Upstream
from autograder.grading.stand_ins import note, standing_in


def double(x):
    return 2 * x


def test_the_grader_answers_only_stand_in_requests_for_the_helpers_of_the_part():
    request = codec.STAND_IN_REQUEST + json.dumps(["helper", codec.encode([[21], {}])])
    # the answer also says which arguments the reference changed in place (none here): see the test
    # below
    assert json.loads(codec.answer_stand_in(request, {"helper": double})) == [
        "returned", codec.encode(42), {"changed": [], "same": None},
    ]
    assert json.loads(codec.answer_stand_in(request, {"other": double}))[0] == "raised"
    assert (
        json.loads(codec.answer_stand_in("What is your name?", {"helper": double}))[0] == "raised"
    )
    assert (
        json.loads(codec.answer_stand_in(codec.STAND_IN_REQUEST + "not json", {"helper": double}))[
            0
        ]
        == "raised"
    )


@pytest.fixture(scope="module")
def session():
    with tempfile.TemporaryDirectory() as folder:
        with KernelSession(Path(folder) / "work", Limits(cell_seconds=20)) as kernel:
            assert (
                kernel.run_cell(
                    "def helper(x):\n    raise NotImplementedError()\n"
                    "def tested(x):\n    global kept\n    kept = helper\n    return helper(x) + 1\n"
                ).status
                == "ok"
            )
            yield kernel


def test_a_part_uses_the_reference_through_its_stand_in_and_gets_the_students_helper_back(session):
    helpers = [Upstream("helper", "helper_part", "tests.test_stand_ins:double")]
    with standing_in(session, helpers) as used:
        assert session.call("tested", 20) == 41
    assert used == {"helper"}
    part = Part("tested_part", 1, "", ("tested",), tuple(helpers))
    assert (
        note(part, helpers, used)
        == "tested was graded with a reference helper, because yours fails (part helper_part)"
    )
    with pytest.raises(NotImplementedError):
        session.call("tested", 20)


def test_a_stand_in_kept_for_later_gets_no_answer(session):
    with standing_in(session, [Upstream("helper", "helper_part", "tests.test_stand_ins:double")]):
        session.call("tested", 1)  # keeps the stand-in in the global `kept`
    run = session.run_cell("kept(5)")
    assert run.status == "error" and "42" not in run.error and "10" not in run.error
    with pytest.raises(StudentRaised):  # its channel is closed: the call raises in the kernel
        session.call("kept", 5)


def add_to_first(values, extra):
    """A reference that changes its argument in place and returns it."""
    values[0].append(extra)
    return values


def vocabulary_list(text):
    """A reference that answers with a list where a student may have chosen a set."""
    return sorted(set(text))


@pytest.fixture(scope="module")
def conventions():
    with tempfile.TemporaryDirectory() as folder:
        with KernelSession(Path(folder) / "work", Limits(cell_seconds=20)) as kernel:
            assert kernel.run_cell(
                "def grow(values, extra):\n    raise NotImplementedError()\n"
                "def grows_in_place(values):\n    grow(values, 'x')\n    return values\n"
                # a set, as the task allows; one symbol too many
                "def symbols(text):\n    return set(text) | {'?'}\n"
                "def adds_to(text):\n    vocabulary = symbols(text)\n    vocabulary.add('new')\n   "
                " return sorted(vocabulary)\n").status == "ok"
            yield kernel


def test_a_stand_in_changes_the_kernels_arguments_as_the_reference_changed_them(conventions):
    """The task allows an in-place update: the student's code
    that relies on it meets a stand-in that does it."""
    with standing_in(conventions,
                     [Upstream("grow", "grow_part", "tests.test_stand_ins:add_to_first")]):
        assert conventions.call("grows_in_place", [["a"], ["b"]]) == [["a", "x"], ["b"]]


def test_a_stand_in_answers_in_the_shape_the_students_own_function_returned(conventions):
    """The student's own helper returned a set (seen on its part's
    hidden inputs): the reference's list comes as a set."""
    assert conventions.call("symbols", "ab") == {"a", "b", "?"}  # as the helper's own part calls it
    with standing_in(conventions,
                     [Upstream("symbols", "symbols_part", "tests.test_stand_ins:vocabulary_list")]):
        assert conventions.call("adds_to", "ba") == ["a", "b", "new"]

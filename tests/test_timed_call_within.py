"""A speed check's cut (``timed_call_within``): a student's call is stopped at the check's limit,
even below the usual limit of a call, so that a too-slow answer costs the limit and no more;
``timed_call`` keeps the usual limit as its least. Through a real kernel."""
import tempfile
import time
from pathlib import Path

import pytest

from autograder.grading.check import StudentFunction
from autograder.course_interface import timed_call, timed_call_within
from autograder.kernel.session import CallTimeout, KernelSession, Limits


@pytest.fixture(scope="module")
def sleeper():
    with tempfile.TemporaryDirectory(prefix="bpe-grade-") as folder:
        with KernelSession(
            Path(folder) / "work", Limits(cell_seconds=20, call_seconds=60)
        ) as session:
            session.run_cell("import time\ndef sleeper(seconds):\n    time.sleep(seconds)\n    "
                             "return seconds")
            yield StudentFunction(session, "sleeper", deadline=time.monotonic() + 300)


def test_a_call_past_the_cut_is_stopped_below_the_usual_limit(sleeper):
    with pytest.raises(CallTimeout):
        timed_call_within(sleeper, 1, 30)  # the usual limit (60 s) would let it return 30


def test_the_kernel_answers_again_after_a_cut(sleeper):
    with pytest.raises(CallTimeout):
        timed_call_within(sleeper, 0.5, 30)
    assert sleeper(0) == 0
    assert timed_call_within(sleeper, 10, 0.1).result == 0.1


def test_timed_call_keeps_the_usual_limit_as_its_least(sleeper):
    result, seconds, round_trips = timed_call(sleeper, 0.5, 2)  # 0.5 s asked, the usual 60 s kept
    assert result == 2 and seconds >= 2 and round_trips == []
